// HTTP/1.1 request parsing (the emulator's side of the wire): just enough of RFC 9112 for
// keep-alive, Content-Length and chunked bodies, Expect: 100-continue and HTTP/1.0. The
// response side, which the client reads, is http1_response.hpp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace pytps {

struct HttpRequest {
    std::string method;
    std::string path;        // target without the query string
    int minor_version = 1;   // HTTP/1.<minor>
    bool keep_alive = true;  // after Connection and version defaults
    bool expect_continue = false;
    bool headers_done = false;  // set even when the body is still incomplete
    std::string body;
};

enum class HttpParse { need_more, complete, error };

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 16 * 1024 * 1024;

// Parses one request from the front of `buf`. complete: `req` is filled and `consumed` is
// its size in bytes. error: `status` (400, 413, 431, 501, 505) and `message` say why; the
// connection should get that status and be closed. need_more: wait for more bytes
// (req.headers_done and req.expect_continue tell whether a 100 Continue is due).
HttpParse parse_http_request(std::string_view buf, HttpRequest& req, size_t& consumed, int& status,
                             std::string& message);

}  // namespace pytps
