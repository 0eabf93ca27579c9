#include "emulator/images.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace pytps {

namespace {

int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

// Decodes at most `max_bytes` bytes from the start of base64 text (stops at the first non-base64 character).
std::string b64_prefix(std::string_view s, size_t max_bytes) {
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (const char c : s) {
        const int v = b64_value(c);
        if (v < 0) break;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
            if (out.size() >= max_bytes) break;
        }
    }
    return out;
}

std::string_view payload_of(std::string_view s) {
    if (s.substr(0, 11) == "data:image/") {
        const size_t comma = s.find(',');
        return comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    }
    return s;
}

uint32_t be16(const std::string& b, size_t i) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(b[i])) << 8) | static_cast<unsigned char>(b[i + 1]);
}

uint32_t be32(const std::string& b, size_t i) { return (be16(b, i) << 16) | be16(b, i + 2); }

constexpr size_t kHeaderBytes = 64 * 1024;  // a JPEG's frame header sits after its tables: well within this

}  // namespace

ImageSize image_size_of(std::string_view encoded) {
    const std::string b = b64_prefix(payload_of(encoded), kHeaderBytes);
    if (b.size() >= 24 && b.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 && b.compare(12, 4, "IHDR") == 0)
        return {static_cast<int64_t>(be32(b, 16)), static_cast<int64_t>(be32(b, 20))};
    if (b.size() >= 4 && static_cast<unsigned char>(b[0]) == 0xFF && static_cast<unsigned char>(b[1]) == 0xD8) {
        size_t i = 2;
        while (i + 9 < b.size()) {
            if (static_cast<unsigned char>(b[i]) != 0xFF) return {};
            const unsigned char marker = static_cast<unsigned char>(b[i + 1]);
            if (marker == 0xFF) {  // fill byte
                ++i;
                continue;
            }
            const uint32_t len = be16(b, i + 2);
            // SOF0..SOF15 carry the frame's size, but DHT (C4), JPG (C8) and DAC (CC) share the range.
            if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
                return {static_cast<int64_t>(be16(b, i + 7)), static_cast<int64_t>(be16(b, i + 5))};
            i += 2 + len;
        }
    }
    return {};
}

int64_t image_tokens(ImageSize size) {
    if (size.width <= 0 || size.height <= 0) return 85;
    double w = static_cast<double>(size.width), h = static_cast<double>(size.height);
    const double fit = std::min(1.0, 2048.0 / std::max(w, h));
    w *= fit;
    h *= fit;
    const double shorter = std::min(w, h);
    if (shorter > 768.0) {
        w *= 768.0 / shorter;
        h *= 768.0 / shorter;
    }
    const auto tiles = static_cast<int64_t>(std::ceil(w / 512.0) * std::ceil(h / 512.0));
    return 85 + 170 * tiles;
}

bool looks_like_image(std::string_view s, bool bare_ok) {
    if (s.substr(0, 11) == "data:image/") return true;
    if (!bare_ok || s.size() < 32) return false;
    const ImageSize size = image_size_of(s);
    return size.width > 0 && size.height > 0;
}

}  // namespace pytps
