#include "emulator/http_write.hpp"

namespace pytps {

const char* reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 413: return "Content Too Large";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Unknown";
    }
}

void append_status_line(std::string& out, int status) {
    out += "HTTP/1.1 ";
    out += std::to_string(status);
    out.push_back(' ');
    out += reason_phrase(status);
    out += "\r\n";
}

void append_chunk(std::string& out, std::string_view payload) {
    static const char hex[] = "0123456789abcdef";
    char buf[16];
    int n = 0;
    size_t v = payload.size();
    do {
        buf[n++] = hex[v & 15];
        v >>= 4;
    } while (v);
    while (n) out.push_back(buf[--n]);
    out += "\r\n";
    out.append(payload.data(), payload.size());
    out += "\r\n";
}

}  // namespace pytps
