// Consistency fuzzer for pytps::json::JsonReader. Two walks over the same input:
//  1. skip_value() + finish() (the validating skip);
//  2. a typed walk: every string read with read_string (and its key with next_key), every
//     number with read_int / read_double, containers entered with begin_* / next_*.
// Both must accept or both reject. Everything decoded must be valid UTF-8 (checked by an
// independent validator). Typed calls on a value of another type must return false
// without failing the reader or moving it.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/embedding_vectors.hpp"
#include "core/json_scan.hpp"

using pytps::json::JsonReader;
using pytps::json::Type;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "JsonReader: %s\n", what);
    std::abort();
}

// Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        uint32_t cp;
        size_t n;
        if (b < 0x80) { ++i; continue; }
        if ((b & 0xE0) == 0xC0) { cp = b & 0x1F; n = 1; }
        else if ((b & 0xF0) == 0xE0) { cp = b & 0x0F; n = 2; }
        else if ((b & 0xF8) == 0xF0) { cp = b & 0x07; n = 3; }
        else return false;
        if (i + n >= s.size()) return false;  // truncated
        for (size_t k = 1; k <= n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n + 1;
    }
    return true;
}

// Typed reads that do not match the next value's type: each must return false, leave
// the reader unfailed and not consume anything.
void probe_wrong_types(JsonReader& r, Type t) {
    const size_t at = r.offset();
    std::string s;
    std::string_view raw;
    int64_t i;
    double d;
    bool b;
    bool matched = false;
    if (t != Type::String) matched |= r.read_string(s) || r.read_raw_string(raw);
    if (t != Type::Number) matched |= r.read_int(i) || r.read_double(d);
    if (t != Type::Bool) matched |= r.read_bool(b);
    if (t != Type::Null) matched |= r.read_null();
    if (matched || r.failed()) fail("a typed read of the wrong type matched or failed the reader");
    // peek() skips whitespace, so compare after re-peeking.
    if (r.peek() != t || r.offset() < at) fail("a typed read of the wrong type moved the reader");
}

std::string_view text_;  // the input of the current run, for number checks

bool walk(JsonReader& r) {
    const Type t = r.peek();
    if (t != Type::Error && t != Type::End && t != Type::Object && t != Type::Array) probe_wrong_types(r, t);
    switch (t) {
        case Type::String: {
            std::string s;
            if (!r.read_string(s)) return false;
            if (!valid_utf8(s)) fail("read_string produced invalid UTF-8");
            return true;
        }
        case Type::Number: {
            // Both typed reads are checked against the C library on the number's text.
            const size_t at = r.offset();
            JsonReader as_double = r;
            int64_t i = 0;
            double d = 0;
            const bool is_int = r.read_int(i);
            if (!is_int && r.failed()) return false;
            if (!is_int && r.offset() != at) fail("read_int refused a number but moved the reader");
            if (!as_double.read_double(d)) fail("read_double refused a number read_int scanned");
            const std::string lit(text_.substr(at, as_double.offset() - at));
            if (std::isnan(d) || d != std::strtod(lit.c_str(), nullptr)) fail("read_double differs from strtod");
            if (is_int) {
                if (r.offset() != as_double.offset()) fail("read_int and read_double end at different places");
                errno = 0;
                const long long ll = std::strtoll(lit.c_str(), nullptr, 10);
                if (errno != 0 || ll != i) fail("read_int differs from strtoll");
                return true;
            }
            errno = 0;
            const long long ll = std::strtoll(lit.c_str(), nullptr, 10);
            if (errno == 0 && lit.find_first_of(".eE") == std::string::npos) {
                (void)ll;
                fail("read_int refused an integer that fits int64");
            }
            r = as_double;
            return true;
        }
        case Type::Bool: {
            bool b;
            return r.read_bool(b);
        }
        case Type::Null:
            return r.read_null();
        case Type::Object: {
            if (!r.begin_object()) return false;
            std::string_view key;
            while (r.next_key(key)) {
                if (!valid_utf8(key)) fail("next_key produced invalid UTF-8");
                if (!walk(r)) return false;
            }
            return !r.failed();
        }
        case Type::Array: {
            if (!r.begin_array()) return false;
            while (r.next_element()) {
                if (!walk(r)) return false;
            }
            return !r.failed();
        }
        default:
            if (r.skip_value()) fail("skip_value accepted what peek() called End/Error");
            return false;
    }
}

// A third walk: strings as raw views; a raw view must decode to what read_string gives.
bool walk_raw(JsonReader& r, std::string_view text) {
    switch (r.peek()) {
        case Type::String: {
            JsonReader copy = r;  // the same position, read decoded
            std::string decoded;
            std::string_view raw;
            if (!r.read_raw_string(raw)) return false;
            if (!copy.read_string(decoded) || copy.offset() != r.offset()) fail("read_raw_string and read_string disagree");
            if (raw.data() < text.data() || raw.data() + raw.size() > text.data() + text.size()) fail("raw view outside input");
            if (raw.find('\\') == std::string_view::npos) {
                std::string sanitized;
                pytps::json::append_utf8_sanitized(sanitized, raw);
                if (sanitized != decoded) fail("unescaped string decodes differently from append_utf8_sanitized");
            }
            return true;
        }
        case Type::Object: {
            if (!r.begin_object()) return false;
            std::string_view key;
            while (r.next_key(key)) {
                if (!walk_raw(r, text)) return false;
            }
            return !r.failed();
        }
        case Type::Array: {
            if (!r.begin_array()) return false;
            while (r.next_element()) {
                if (!walk_raw(r, text)) return false;
            }
            return !r.failed();
        }
        default:
            return r.skip_value();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // An exact-size copy, so a read one past the end is an ASan error.
    std::vector<char> buf(data, data + size);
    const std::string_view text(buf.data(), buf.size());

    JsonReader skip(text);
    const bool ok_skip = skip.skip_value() && skip.finish();
    if (!ok_skip && (!skip.failed() || *skip.error() == '\0')) fail("rejected without an error message");
    if (skip.error_offset() > size) fail("error offset past the end");

    text_ = text;
    JsonReader typed(text);
    const bool ok_typed = walk(typed) && typed.finish();
    if (ok_skip != ok_typed) {
        std::fprintf(stderr, "skip %d (%s) vs typed %d (%s)\n", ok_skip, skip.error(), ok_typed, typed.error());
        fail("skip_value and the typed walk disagree");
    }

    JsonReader raw(text);
    const bool ok_raw = walk_raw(raw, text) && raw.finish();
    if (ok_raw != ok_skip) fail("the raw-string walk disagrees");

    // Sanitizing arbitrary bytes always yields valid UTF-8, and valid UTF-8 is unchanged.
    std::string sanitized;
    pytps::json::append_utf8_sanitized(sanitized, text);
    if (!valid_utf8(sanitized)) fail("append_utf8_sanitized produced invalid UTF-8");
    if (valid_utf8(text) && sanitized != text) fail("append_utf8_sanitized changed valid UTF-8");

    // An embeddings body's vectors counted (core/embedding_vectors): only in strict JSON, whose
    // emptied text is strict JSON too, shorter by at least each vector's numbers and commas,
    // with nothing left to count.
    std::string emptied;
    std::vector<pytps::CountedVector> counted;
    if (pytps::empty_float_vectors(text, emptied, counted)) {
        if (!ok_skip) fail("empty_float_vectors counted vectors in text JsonReader rejects");
        if (counted.empty()) fail("empty_float_vectors succeeded without a vector");
        size_t least = 0;
        for (const auto& v : counted) {
            if (v.components == 0) fail("a counted vector of no components");
            least += 2 * v.components - 1;
        }
        if (emptied.size() + least > size) fail("the emptied text is not shorter by the vectors");
        JsonReader again(emptied);
        if (!(again.skip_value() && again.finish())) fail("the emptied text is not JSON");
        std::string twice;
        std::vector<pytps::CountedVector> none;
        if (pytps::empty_float_vectors(emptied, twice, none)) fail("an emptied vector was counted again");
    } else if (!emptied.empty() || !counted.empty()) {
        fail("empty_float_vectors failed and left output behind");
    }
    return 0;
}
