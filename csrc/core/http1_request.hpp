// HTTP/1.1 request parsing (the emulator's side of the wire): just enough of RFC 9112 for
// keep-alive, Content-Length and chunked bodies, Expect: 100-continue and HTTP/1.0. The
// response side, which the client reads, is http1_response.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
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

// One request parsed as its bytes arrive. The caller keeps the connection's unconsumed bytes
// in one buffer, appends each read and calls parse() with the whole buffer again; the parser
// resumes where it stopped (the blank-line search, the body, the chunk being read), so a
// request costs about one pass over its bytes however finely it is split. Re-parsing from the
// start at every read would be quadratic in a large body arriving in small reads.
class HttpRequestParser {
public:
    // `buf` must hold the bytes of the previous call and possibly more after them. complete:
    // request() is filled and consumed() is its size in bytes; erase those and reset().
    // error: `status` (400, 413, 431, 501, 505) and `message` say why; the connection should
    // get that status and be closed. need_more: wait for more bytes (request().headers_done
    // and request().expect_continue tell whether a 100 Continue is due).
    HttpParse parse(std::string_view buf, int& status, std::string& message);
    HttpRequest& request() { return req_; }
    size_t consumed() const { return consumed_; }
    void reset();
    // Bytes examined over the parser's life (searched, parsed or copied): the cost of parsing,
    // for the tests that check it stays linear.
    uint64_t work() const { return work_; }

private:
    enum class Phase : uint8_t { head, length_body, chunk_size, chunk_data, trailer, done };
    Phase phase_ = Phase::head;
    HttpRequest req_;
    size_t scan_ = 0;    // where the next search for a line end resumes
    size_t pos_ = 0;     // start of the line or chunk data being read
    size_t length_ = 0;  // Content-Length, or the size of the chunk being read
    size_t consumed_ = 0;
    uint64_t work_ = 0;

    HttpParse parse_head(std::string_view buf, size_t head_end, int& status, std::string& message);
    HttpParse parse_chunked(std::string_view buf, int& status, std::string& message);
    // The next CRLF at or after scan_ (npos: none yet; scan_ then moves to where the next
    // search must start so that a CRLF split across reads is still found).
    size_t find_crlf(std::string_view buf);
};

// Parses one request from the front of `buf` in one go (a fresh HttpRequestParser): the same
// results as feeding `buf` to the incremental parser.
HttpParse parse_http_request(std::string_view buf, HttpRequest& req, size_t& consumed, int& status,
                             std::string& message);

}  // namespace pytps
