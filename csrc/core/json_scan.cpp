#include "core/json_scan.hpp"

#include <charconv>
#include <cstring>

namespace pytps {
namespace json {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;


inline int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
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

// For a JSON number whose magnitude does not fit a double: true when it is too large
// (it becomes an infinity), false when too small (it becomes zero). Such a number is
// at least 1e308 or below 1e-323, so the sign of its decimal exponent decides.
bool magnitude_is_huge(const char* p, const char* end) noexcept {
    if (p < end && *p == '-') ++p;
    int64_t int_digits = 0;  // digits before the point, leading zeros excluded
    int64_t frac_zeros = 0;  // zeros after the point before the first non-zero digit
    bool seen_nonzero = false;
    for (; p < end && detail::is_digit(*p); ++p) {
        if (*p != '0') seen_nonzero = true;
        if (seen_nonzero && int_digits < (int64_t(1) << 40)) ++int_digits;
    }
    if (p < end && *p == '.') {
        for (++p; p < end && detail::is_digit(*p); ++p) {
            if (!seen_nonzero && *p == '0' && frac_zeros < (int64_t(1) << 40)) ++frac_zeros;
            else seen_nonzero = true;
        }
    }
    int64_t exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        ++p;
        const bool neg = p < end && *p == '-';
        if (p < end && (*p == '+' || *p == '-')) ++p;
        for (; p < end && detail::is_digit(*p); ++p) {
            if (exp < (int64_t(1) << 40)) exp = exp * 10 + (*p - '0');
        }
        if (neg) exp = -exp;
    }
    // The decimal exponent of the leading digit.
    const int64_t e10 = (int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1)) + exp;
    return e10 > 0;
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











bool JsonReader::scan_number(double* d, int64_t* i, bool* is_int) noexcept {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_) return fail("invalid number");
    if (*p_ == '0') {
        ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
        while (p_ < end_ && detail::is_digit(*p_)) ++p_;
    } else {
        return fail("invalid number");
    }
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
        integral = false;
        ++p_;
        if (p_ >= end_ || !detail::is_digit(*p_)) return fail("invalid number");
        while (p_ < end_ && detail::is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
        integral = false;
        ++p_;
        if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
        if (p_ >= end_ || !detail::is_digit(*p_)) return fail("invalid number");
        while (p_ < end_ && detail::is_digit(*p_)) ++p_;
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
        // rather than failing the event. (from_chars leaves v alone then, and says
        // result_out_of_range for both directions: underflow used to become infinity.)
        if (r.ec == std::errc::result_out_of_range) {
            v = magnitude_is_huge(start, p_) ? __builtin_huge_val() : 0.0;
            if (*start == '-') v = -v;
        }
        *d = v;
    }
    return true;
}

// An escape, a control character or (when decoding) a non-ASCII byte at p_.
bool JsonReader::scan_special(std::string* out, bool* had_escape, const char*& run) noexcept {
    const bool check_utf8 = out != nullptr;
    const unsigned char c = static_cast<unsigned char>(*p_);
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
        return true;
    }
    if (c >= 0x80) {
        if (!check_utf8) { ++p_; return true; }
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
        return true;
    }
    ++p_;
    return true;
}

bool JsonReader::decode_key(std::string_view& key, bool had_escape) noexcept {
    key_scratch_.clear();
    if (had_escape) {
        JsonReader sub(std::string_view(key.data() - 1, key.size() + 2));
        if (!sub.read_string(key_scratch_)) return fail("invalid key");
    } else {
        // Found by fuzzing: invalid UTF-8 in a key without escapes used to be returned
        // raw, breaking the promise that every decoded string is valid UTF-8.
        append_utf8_sanitized(key_scratch_, key);
    }
    key = key_scratch_;
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

bool JsonReader::skip_compound() noexcept {
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
