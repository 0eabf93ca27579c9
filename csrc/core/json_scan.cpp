#include "core/json_scan.hpp"

#include <charconv>
#include <cstring>

namespace pytps {
namespace json {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

inline bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

inline int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// SWAR: true when any byte of w is '"', '\\', below 0x20, or (when high_too) >= 0x80.
inline bool needs_attention(uint64_t w, bool high_too) noexcept {
    constexpr uint64_t ones = 0x0101010101010101ULL;
    constexpr uint64_t highs = 0x8080808080808080ULL;
    auto has_zero = [](uint64_t v) { return (v - ones) & ~v & highs; };
    const uint64_t quote = has_zero(w ^ (ones * '"'));
    const uint64_t bslash = has_zero(w ^ (ones * '\\'));
    // Bytes below 0x20 (and, as a side effect, any byte >= 0x80; filtered out below
    // when high bytes are allowed).
    const uint64_t ctrl = (w - ones * 0x20) & ~w & highs;
    if (quote | bslash | ctrl) return true;
    return high_too && (w & highs) != 0;
}

// Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not valid; in that
// case *subpart is the length of its maximal subpart (at least 1).
inline int utf8_sequence(const unsigned char* s, const unsigned char* end, int* subpart) noexcept {
    const unsigned char b0 = s[0];
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
    } else if (b0 == 0xE0) {
        need = 2; lo = 0xA0;
    } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
        need = 2;
    } else if (b0 == 0xED) {
        need = 2; hi = 0x9F;
    } else if (b0 == 0xF0) {
        need = 3; lo = 0x90;
    } else if (b0 >= 0xF1 && b0 <= 0xF3) {
        need = 3;
    } else if (b0 == 0xF4) {
        need = 3; hi = 0x8F;
    } else {
        *subpart = 1;
        return 0;
    }
    for (int k = 1; k <= need; ++k) {
        if (s + k >= end) { *subpart = k; return 0; }
        const unsigned char b = s[k];
        const unsigned char l = (k == 1) ? lo : 0x80;
        const unsigned char h = (k == 1) ? hi : 0xBF;
        if (b < l || b > h) { *subpart = k; return 0; }
    }
    return need + 1;
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

void append_utf8_sanitized(std::string& out, std::string_view bytes) {
    const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
    const auto* end = s + bytes.size();
    const auto* run = s;
    while (s < end) {
        if (*s < 0x80) { ++s; continue; }
        int subpart = 0;
        const int n = utf8_sequence(s, end, &subpart);
        if (n) { s += n; continue; }
        out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(s - run));
        append_utf8(out, kReplacement);
        s += subpart;
        run = s;
    }
    out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(s - run));
}

bool JsonReader::fail(const char* what) noexcept {
    if (!error_) {
        error_ = what;
        error_offset_ = offset();
    }
    return false;
}

void JsonReader::skip_ws() noexcept {
    while (p_ < end_ && is_ws(*p_)) ++p_;
}

Type JsonReader::peek() noexcept {
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
        default: return is_digit(*p_) ? Type::Number : Type::Error;
    }
}

bool JsonReader::begin_object() noexcept {
    if (peek() != Type::Object) return error_ ? false : fail("expected an object");
    if (depth_ >= kMaxDepth) return fail("nesting too deep");
    ++p_;
    first_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    object_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    ++depth_;
    return true;
}

bool JsonReader::begin_array() noexcept {
    if (peek() != Type::Array) return error_ ? false : fail("expected an array");
    if (depth_ >= kMaxDepth) return fail("nesting too deep");
    ++p_;
    first_bits_[depth_ / 64] |= (1ULL << (depth_ % 64));
    object_bits_[depth_ / 64] &= ~(1ULL << (depth_ % 64));
    ++depth_;
    return true;
}

bool JsonReader::after_value(char close) noexcept {
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

bool JsonReader::next_key(std::string_view& key) noexcept {
    if (!after_value('}')) return false;
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return fail("expected a string key");
    ++p_;
    const char* start = p_;
    bool had_escape = false;
    key_scratch_.clear();
    // Keys are nearly always plain ASCII: take them as a view, and decode only when an
    // escape or a non-ASCII byte makes the raw bytes differ from the text.
    if (!scan_string(nullptr, &had_escape)) return false;
    const std::string_view raw(start, static_cast<size_t>(p_ - 1 - start));
    if (had_escape) {
        JsonReader sub(std::string_view(start - 1, raw.size() + 2));
        if (!sub.read_string(key_scratch_)) return fail("invalid key");
        key = key_scratch_;
    } else {
        key = raw;
    }
    skip_ws();
    if (p_ >= end_ || *p_ != ':') return fail("expected ':' after a key");
    ++p_;
    return true;
}

bool JsonReader::next_element() noexcept {
    if (!after_value(']')) return false;
    skip_ws();
    if (p_ >= end_) return fail("unexpected end of input inside an array");
    return true;
}

bool JsonReader::scan_string(std::string* out, bool* had_escape) noexcept {
    const char* run = p_;
    const bool check_utf8 = out != nullptr;
    for (;;) {
        // Fast path: eight plain bytes at a time.
        while (end_ - p_ >= 8) {
            uint64_t w;
            std::memcpy(&w, p_, 8);
            if (needs_attention(w, check_utf8)) break;
            p_ += 8;
        }
        if (p_ >= end_) return fail("unterminated string");
        const unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"') {
            if (out) out->append(run, static_cast<size_t>(p_ - run));
            ++p_;
            return true;
        }
        if (c < 0x20) return fail("control character in a string");
        if (c == '\\') {
            if (had_escape) *had_escape = true;
            if (out) out->append(run, static_cast<size_t>(p_ - run));
            if (end_ - p_ < 2) return fail("unterminated string");
            const char e = p_[1];
            p_ += 2;
            char simple = 0;
            switch (e) {
                case '"': simple = '"'; break;
                case '\\': simple = '\\'; break;
                case '/': simple = '/'; break;
                case 'b': simple = '\b'; break;
                case 'f': simple = '\f'; break;
                case 'n': simple = '\n'; break;
                case 'r': simple = '\r'; break;
                case 't': simple = '\t'; break;
                case 'u': break;
                default: return fail("invalid escape in a string");
            }
            if (simple) {
                if (out) out->push_back(simple);
            } else {
                uint32_t cp = 0;
                if (end_ - p_ < 4) return fail("truncated \\u escape");
                for (int k = 0; k < 4; ++k) {
                    const int h = hex_value(p_[k]);
                    if (h < 0) return fail("invalid \\u escape");
                    cp = (cp << 4) | static_cast<uint32_t>(h);
                }
                p_ += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    // A high surrogate joins with an immediately following low one;
                    // alone it is not a character and decodes to U+FFFD.
                    uint32_t low = 0;
                    bool paired = false;
                    if (end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
                        paired = true;
                        for (int k = 0; k < 4; ++k) {
                            const int h = hex_value(p_[2 + k]);
                            if (h < 0) { paired = false; break; }
                            low = (low << 4) | static_cast<uint32_t>(h);
                        }
                        paired = paired && low >= 0xDC00 && low <= 0xDFFF;
                    }
                    if (paired) {
                        p_ += 6;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else {
                        cp = kReplacement;
                    }
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    cp = kReplacement;
                }
                if (out) append_utf8(*out, cp);
            }
            run = p_;
            continue;
        }
        if (c >= 0x80) {
            if (!check_utf8) { ++p_; continue; }
            int subpart = 0;
            const int n = utf8_sequence(reinterpret_cast<const unsigned char*>(p_),
                                        reinterpret_cast<const unsigned char*>(end_), &subpart);
            if (n) {
                p_ += n;
            } else {
                out->append(run, static_cast<size_t>(p_ - run));
                append_utf8(*out, kReplacement);
                p_ += subpart;
                run = p_;
            }
            continue;
        }
        ++p_;
    }
}

bool JsonReader::read_string(std::string& out) noexcept {
    if (peek() != Type::String) return false;
    ++p_;
    return scan_string(&out, nullptr);
}

bool JsonReader::read_raw_string(std::string_view& raw) noexcept {
    if (peek() != Type::String) return false;
    ++p_;
    const char* start = p_;
    if (!scan_string(nullptr, nullptr)) return false;
    raw = std::string_view(start, static_cast<size_t>(p_ - 1 - start));
    return true;
}

bool JsonReader::scan_number(double* d, int64_t* i, bool* is_int) noexcept {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_) return fail("invalid number");
    if (*p_ == '0') {
        ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
        while (p_ < end_ && is_digit(*p_)) ++p_;
    } else {
        return fail("invalid number");
    }
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
        integral = false;
        ++p_;
        if (p_ >= end_ || !is_digit(*p_)) return fail("invalid number");
        while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
        integral = false;
        ++p_;
        if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
        if (p_ >= end_ || !is_digit(*p_)) return fail("invalid number");
        while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (is_int) {
        *is_int = false;
        if (integral) {
            int64_t v = 0;
            const auto r = std::from_chars(start, p_, v);
            *is_int = r.ec == std::errc() && r.ptr == p_;
            if (i) *i = v;
        }
    }
    if (d) {
        double v = 0;
        const auto r = std::from_chars(start, p_, v);
        // Out-of-range magnitudes are valid JSON; report them as infinities/zero
        // rather than failing the event.
        if (r.ec == std::errc::result_out_of_range) {
            v = (*start == '-') ? -__builtin_huge_val() : __builtin_huge_val();
        }
        *d = v;
    }
    return true;
}

bool JsonReader::read_int(int64_t& out) noexcept {
    if (peek() != Type::Number) return false;
    const char* save = p_;
    bool is_int = false;
    int64_t v = 0;
    if (!scan_number(nullptr, &v, &is_int)) return false;
    if (!is_int) {
        p_ = save;
        return false;
    }
    out = v;
    return true;
}

bool JsonReader::read_double(double& out) noexcept {
    if (peek() != Type::Number) return false;
    return scan_number(&out, nullptr, nullptr);
}

bool JsonReader::expect_literal(const char* lit, size_t n) noexcept {
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, lit, n) != 0) return fail("invalid literal");
    p_ += n;
    return true;
}

bool JsonReader::read_bool(bool& out) noexcept {
    if (peek() != Type::Bool) return false;
    if (*p_ == 't') {
        if (!expect_literal("true", 4)) return false;
        out = true;
    } else {
        if (!expect_literal("false", 5)) return false;
        out = false;
    }
    return true;
}

bool JsonReader::read_null() noexcept {
    if (peek() != Type::Null) return false;
    return expect_literal("null", 4);
}

bool JsonReader::skip_value() noexcept {
    const int base = depth_;
    for (;;) {
        // Read one value; containers are entered rather than recursed into.
        bool entered = false;
        switch (peek()) {
            case Type::String:
                ++p_;
                if (!scan_string(nullptr, nullptr)) return false;
                break;
            case Type::Number:
                if (!scan_number(nullptr, nullptr, nullptr)) return false;
                break;
            case Type::Bool: {
                bool b;
                if (!read_bool(b)) return false;
                break;
            }
            case Type::Null:
                if (!read_null()) return false;
                break;
            case Type::Object: {
                if (!begin_object()) return false;
                std::string_view k;
                if (next_key(k)) entered = true;
                else if (error_) return false;
                break;
            }
            case Type::Array:
                if (!begin_array()) return false;
                if (next_element()) entered = true;
                else if (error_) return false;
                break;
            case Type::End:
                return fail("unexpected end of input, expected a value");
            default:
                return fail("unexpected character, expected a value");
        }
        if (entered) continue;
        // Climb out of containers that are done, until one has another value or we are
        // back where we started.
        for (;;) {
            if (depth_ <= base) return true;
            const int level = depth_ - 1;
            const bool is_object = (object_bits_[level / 64] >> (level % 64)) & 1ULL;
            if (is_object) {
                std::string_view k;
                if (next_key(k)) break;
            } else {
                if (next_element()) break;
            }
            if (error_) return false;
        }
    }
}

bool JsonReader::finish() noexcept {
    if (error_) return false;
    if (depth_ != 0) return fail("unclosed container");
    skip_ws();
    if (p_ != end_) return fail("unexpected data after the value");
    return true;
}

}  // namespace json
}  // namespace pytps
