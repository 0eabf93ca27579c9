// Appending JSON text to a std::string: escaped strings and integers. Responses are built
// by concatenation in the providers' exact key order, so no writer object is needed.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace pytps {

// Appends `s` as a JSON string literal (quotes included). Bytes >= 0x80 pass through, so
// valid UTF-8 stays valid UTF-8; control characters become escapes.
inline void json_str(std::string& out, std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 15]);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
}

inline void json_int(std::string& out, int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// A finite double, shortest round-trip form.
inline void json_double(std::string& out, double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace pytps
