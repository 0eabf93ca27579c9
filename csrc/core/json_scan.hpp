// A small, strict, pull-style JSON reader for the few fields pytps needs from each
// streamed event (and from the requests the emulator receives).
//
// Why not a DOM: one event is a few hundred bytes of which we want one or two strings;
// building a tree costs allocations per event. The reader walks the text once, decodes
// only the strings it is asked for, and validates everything it skips, so a malformed
// event is always detected (RFC 8259 grammar; no comments, no trailing commas, no NaN).
//
// Strings: escapes are decoded exactly, surrogate pairs are joined; a lone surrogate
// escape decodes to U+FFFD. Raw bytes that are not valid UTF-8 are replaced by U+FFFD,
// one per maximal subpart (the Unicode recommended practice, which is what Python's
// bytes.decode("utf-8", "replace") and the WHATWG decoder do), so every decoded string
// is valid UTF-8.
//
// Usage:
//   JsonReader r(text);
//   if (!r.begin_object()) ...;
//   std::string_view key;
//   while (r.next_key(key)) { if (key == "x") r.read_string(out); else r.skip_value(); }
//   if (!r.finish()) ... r.error() ...
// Every call returns false on malformed input (and then r.failed() is true and stays
// true), so a chain of calls needs one check at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pytps {
namespace json {

enum class Type { Null, Bool, Number, String, Array, Object, End, Error };

// Appends the UTF-8 encoding of code point cp (must be a scalar value) to out.
void append_utf8(std::string& out, uint32_t cp);

// Appends bytes to out, replacing invalid UTF-8 with U+FFFD per maximal subpart.
void append_utf8_sanitized(std::string& out, std::string_view bytes);

// Where a reader stood, so that a later reader over text with the same prefix can
// resume there instead of reading the prefix again (identical bytes parse identically).
struct Checkpoint {
    size_t offset = 0;
    int depth = 0;
    uint64_t first_bits = 0;
    uint64_t object_bits = 0;
};

class JsonReader {
public:
    // Nesting deeper than this is an error, so a hostile input cannot exhaust memory.
    static constexpr int kMaxDepth = 512;

    explicit JsonReader(std::string_view text) noexcept
        : p_(text.data()), end_(text.data() + text.size()), begin_(text.data()) {}

    // Type of the next value (whitespace skipped); End at the end of input.
    Type peek() noexcept;

    // Objects: begin_object() consumes '{'; next_key() then yields each key (its value
    // must be read or skipped before the next call) and returns false after consuming
    // the closing '}' (or on error: check failed()). The key is decoded like a string
    // value; it may point into an internal buffer, so it is valid only until the next
    // call that reads a key (next_key, or skip_value over an object): compare it first.
    bool begin_object() noexcept;
    bool next_key(std::string_view& key) noexcept;

    // Arrays: begin_array() consumes '['; next_element() returns true when a value
    // follows (read or skip it) and false after consuming ']' (or on error).
    bool begin_array() noexcept;
    bool next_element() noexcept;

    // Scalars. A call on a value of another type returns false without consuming it and
    // without failing the reader (so callers can try alternatives or skip it).
    bool read_string(std::string& out_append) noexcept;  // decoded, appended to out
    bool read_raw_string(std::string_view& raw) noexcept;  // undecoded body, no quotes
    bool read_int(int64_t& out) noexcept;  // an integer literal that fits int64
    bool read_double(double& out) noexcept;
    bool read_bool(bool& out) noexcept;
    bool read_null() noexcept;

    // Skips (and validates) one whole value of any type.
    bool skip_value() noexcept {
        switch (peek()) {
            case Type::String:
                ++p_;
                return scan_string(nullptr, nullptr);
            case Type::Number:
                return scan_number(nullptr, nullptr, nullptr);
            default:
                return skip_compound();
        }
    }

    // After the top-level value: true when only whitespace remains.
    bool finish() noexcept;

    // Saves the position (only between values, at depth <= 64). Returns false otherwise.
    bool save(Checkpoint& cp) const noexcept {
        if (error_ || depth_ > 64) return false;
        cp.offset = offset();
        cp.depth = depth_;
        cp.first_bits = first_bits_[0];
        cp.object_bits = object_bits_[0];
        return true;
    }
    // Resumes at a checkpoint saved over text that shares this text's first cp.offset bytes.
    void restore(const Checkpoint& cp) noexcept {
        p_ = begin_ + cp.offset;
        depth_ = cp.depth;
        first_bits_[0] = cp.first_bits;
        object_bits_[0] = cp.object_bits;
    }

    bool failed() const noexcept { return error_ != nullptr; }
    const char* error() const noexcept { return error_ ? error_ : ""; }
    size_t error_offset() const noexcept { return error_offset_; }
    size_t offset() const noexcept { return static_cast<size_t>(p_ - begin_); }
    std::string_view input() const noexcept { return {begin_, static_cast<size_t>(end_ - begin_)}; }

private:
    bool fail(const char* what) noexcept;
    void skip_ws() noexcept;
    // Scans a string body starting after the opening quote; on success p_ is past the
    // closing quote. When out is non-null the decoded body is appended to it.
    bool scan_string(std::string* out, bool* had_escape) noexcept;
    bool scan_special(std::string* out, bool* had_escape, const char*& run) noexcept;
    bool scan_number(double* d, int64_t* i, bool* is_int) noexcept;
    bool expect_literal(const char* lit, size_t n) noexcept;
    bool skip_compound() noexcept;  // containers, literals and errors
    // A key with escapes or non-ASCII bytes, decoded into key_scratch_ (valid until the next key).
    bool decode_key(std::string_view& key, bool had_escape) noexcept;
    // Consumes the ',' or closing bracket after a member/element. Returns true when
    // another member/element follows.
    bool after_value(char close) noexcept;

    const char* p_;
    const char* end_;
    const char* begin_;
    const char* error_ = nullptr;
    size_t error_offset_ = 0;
    // Per nesting level: whether the container has produced its first member yet.
    // Bit stack; kMaxDepth bits.
    uint64_t first_bits_[kMaxDepth / 64] = {};
    // Per nesting level: 1 for an object, 0 for an array (skip_value walks containers
    // iteratively with this instead of recursing).
    uint64_t object_bits_[kMaxDepth / 64] = {};
    int depth_ = 0;
    std::string key_scratch_;
};

// Opens the value next in r when it is of type t (an object or an array) and returns true;
// skips it and returns false otherwise.
inline bool open_or_skip(JsonReader& r, Type t) {
    if (r.peek() != t) {
        r.skip_value();
        return false;
    }
    return t == Type::Object ? r.begin_object() : r.begin_array();
}

// Calls fn(key) for each member of the object value next in r (fn reads or skips the member's
// value); a value that is not an object is skipped.
template <class Fn>
void each_member(JsonReader& r, Fn&& fn) {
    if (!open_or_skip(r, Type::Object)) return;
    std::string_view key;
    while (r.next_key(key)) fn(key);
}

// Calls fn() with r at each object element of the array value next in r (fn reads or skips
// the element); other elements, and a value that is not an array, are skipped.
template <class Fn>
void each_object(JsonReader& r, Fn&& fn) {
    if (!open_or_skip(r, Type::Array)) return;
    while (r.next_element()) {
        if (r.peek() == Type::Object) {
            fn();
        } else {
            r.skip_value();
        }
    }
}


// ---- hot path, inline so the dialect extractors compile to straight-line code ----

namespace detail {
inline bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// SWAR over 8 bytes (little-endian load): a mask whose lowest set bit marks the first
// byte that is '"', '\\', below 0x20 or (when high_too) >= 0x80. The lowest flagged byte is
// always a true match (borrows only propagate upwards from one), which is all we use.
inline uint64_t attention_mask(uint64_t w, bool high_too) noexcept {
    constexpr uint64_t ones = 0x0101010101010101ULL;
    constexpr uint64_t highs = 0x8080808080808080ULL;
    auto has_zero = [](uint64_t v) { return (v - ones) & ~v & highs; };
    const uint64_t quote = has_zero(w ^ (ones * '"'));
    const uint64_t bslash = has_zero(w ^ (ones * '\\'));
    const uint64_t ctrl = (w - ones * 0x20) & ~w & highs;  // bytes below 0x20
    uint64_t mask = quote | bslash | ctrl;
    if (high_too) mask |= w & highs;
    return mask;
}

#if defined(__SSE2__)
// The same for 16 bytes with SSE2 (part of every x86-64): bit i set when byte i matters.
inline uint32_t attention_mask16(const char* p, bool high_too) noexcept {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    const __m128i bslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    const __m128i ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
    uint32_t mask = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, bslash), ctrl)));
    if (high_too) mask |= static_cast<uint32_t>(_mm_movemask_epi8(v));
    return mask;
}
#endif

inline bool has_high_byte(std::string_view s) noexcept {
    unsigned char any = 0;
    for (const char c : s) any |= static_cast<unsigned char>(c);
    return any >= 0x80;
}
}  // namespace detail

inline void JsonReader::skip_ws() noexcept {
    // Compact JSON has no whitespace: one comparison settles the common case.
    if (p_ < end_ && static_cast<unsigned char>(*p_) > ' ') return;
    while (p_ < end_ && detail::is_ws(*p_)) ++p_;
}

inline Type JsonReader::peek() noexcept {
    if (error_) return Type::Error;
    skip_ws();
    if (p_ >= end_) return Type::End;
    switch (*p_) {
        case '{': return Type::Object;
        case '[': return Type::Array;
        case '"': return Type::String;
        case 't': case 'f': return Type::Bool;
        case 'n': return Type::Null;
        case '-': return Type::Number;
        default: return detail::is_digit(*p_) ? Type::Number : Type::Error;
    }
}

inline bool JsonReader::begin_object() noexcept {
    if (peek() != Type::Object) return error_ ? false : fail("expected an object");
    if (depth_ >= kMaxDepth) return fail("nesting too deep");
    ++p_;
    first_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    object_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    ++depth_;
    return true;
}

inline bool JsonReader::begin_array() noexcept {
    if (peek() != Type::Array) return error_ ? false : fail("expected an array");
    if (depth_ >= kMaxDepth) return fail("nesting too deep");
    ++p_;
    first_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    object_bits_[depth_ / 64] &= ~(1ULL << (depth_ % 64));
    ++depth_;
    return true;
}

inline bool JsonReader::after_value(char close) noexcept {
    if (error_ || depth_ == 0) return false;
    const int level = depth_ - 1;
    const uint64_t bit = 1ULL << (level % 64);
    skip_ws();
    if (p_ >= end_) return fail("unexpected end of input inside a container");
    if (first_bits_[level / 64] & bit) {
        first_bits_[level / 64] &= ~bit;
        if (*p_ == close) {
            ++p_;
            --depth_;
            return false;
        }
        return true;
    }
    if (*p_ == ',') {
        ++p_;
        skip_ws();
        if (p_ < end_ && *p_ == close) return fail("trailing comma");
        return true;
    }
    if (*p_ == close) {
        ++p_;
        --depth_;
        return false;
    }
    return fail(close == '}' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
}

inline bool JsonReader::next_key(std::string_view& key) noexcept {
    if (!after_value('}')) return false;
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return fail("expected a string key");
    ++p_;
    const char* start = p_;
    bool had_escape = false;
    // Keys are nearly always plain: take them as a view of the input, and decode only
    // when an escape makes the raw bytes differ from the text.
    if (!scan_string(nullptr, &had_escape)) return false;
    key = std::string_view(start, static_cast<size_t>(p_ - 1 - start));
    if ((had_escape || detail::has_high_byte(key)) && !decode_key(key, had_escape)) return false;
    skip_ws();
    if (p_ >= end_ || *p_ != ':') return fail("expected ':' after a key");
    ++p_;
    return true;
}

inline bool JsonReader::next_element() noexcept {
    if (!after_value(']')) return false;
    skip_ws();
    if (p_ >= end_) return fail("unexpected end of input inside an array");
    return true;
}

inline bool JsonReader::read_string(std::string& out) noexcept {
    if (peek() != Type::String) return false;
    ++p_;
    return scan_string(&out, nullptr);
}

inline bool JsonReader::read_raw_string(std::string_view& raw) noexcept {
    if (peek() != Type::String) return false;
    ++p_;
    const char* start = p_;
    if (!scan_string(nullptr, nullptr)) return false;
    raw = std::string_view(start, static_cast<size_t>(p_ - 1 - start));
    return true;
}

inline bool JsonReader::scan_string(std::string* out, bool* had_escape) noexcept {
    const char* run = p_;
    const bool check_utf8 = out != nullptr;
    for (;;) {
        // Whole blocks of plain bytes at a time, then straight to the first byte that matters.
#if defined(__SSE2__)
        while (end_ - p_ >= 16) {
            const uint32_t mask = detail::attention_mask16(p_, check_utf8);
            if (mask) {
                p_ += __builtin_ctz(mask);
                break;
            }
            p_ += 16;
        }
#endif
        while (end_ - p_ >= 8) {
            uint64_t w;
            std::memcpy(&w, p_, 8);
            const uint64_t mask = detail::attention_mask(w, check_utf8);
            if (mask) {
                p_ += __builtin_ctzll(mask) >> 3;
                break;
            }
            p_ += 8;
        }
        if (p_ >= end_) return fail("unterminated string");
        const unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"') {
            if (out) out->append(run, static_cast<size_t>(p_ - run));
            ++p_;
            return true;
        }
        if (c >= 0x20 && c != '\\' && (c < 0x80 || !check_utf8)) {  // a plain byte in the tail
            ++p_;
            continue;
        }
        if (!scan_special(out, had_escape, run)) return false;
    }
}

}  // namespace json
}  // namespace pytps
