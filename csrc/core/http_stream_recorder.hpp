// HttpStreamRecorder: one HTTP/1.x response read straight off the socket. The parser
// strips the framing and the StreamRecorder times the body, so a transport makes a single
// native call per read: feed(bytes, t_ns).
//
// Only 2xx bodies are recorded (they are the stream); any other status keeps the first
// kMaxErrorBody bytes of its body for the error report, since that is what explains it.
#pragma once

#include <cstdint>
#include <string>

#include "core/http1_response.hpp"
#include "core/stream_recorder.hpp"

namespace pytps {

class HttpStreamRecorder {
public:
    static constexpr int64_t kNoTime = StreamRecorder::kNoTime;
    static constexpr size_t kMaxErrorBody = 4096;
    // A 2xx body's first bytes, kept so that a body that is not a stream (a proxy's HTML sign-in
    // page) can be named in the error: a comparison per read once they are kept.
    static constexpr size_t kMaxBodyStart = 256;

    explicit HttpStreamRecorder(Dialect dialect,
                                size_t max_header_bytes = Http1ResponseParser::kDefaultMaxHeaderBytes)
        : parser_(max_header_bytes), recorder_(dialect) {}

    // One read at t_ns. Returns the bytes consumed (see Http1ResponseParser::feed).
    size_t feed(const char* data, size_t n, int64_t t_ns) {
        const bool had_headers = parser_.headers_done();
        const size_t used = parser_.feed(data, n, [&](const char* p, size_t len) {
            if (parser_.status() / 100 == 2) {
                if (body_start_.size() < kMaxBodyStart) {
                    const size_t room = kMaxBodyStart - body_start_.size();
                    body_start_.append(p, len < room ? len : room);
                }
                recorder_.feed(p, len, t_ns);
            } else if (error_body_.size() < kMaxErrorBody) {
                const size_t room = kMaxErrorBody - error_body_.size();
                error_body_.append(p, len < room ? len : room);
            }
        });
        if (!had_headers && parser_.headers_done()) t_headers_ns_ = t_ns;
        return used;
    }

    // The peer closed the connection at t_ns: completes a close-delimited body (or
    // records why the response is incomplete) and closes the recorder at t_ns.
    void finish_eof(int64_t t_ns) {
        parser_.finish_eof();
        recorder_.close(t_ns);
    }
    // End of the body at t_ns (after message_done, or to give up). Idempotent.
    void close(int64_t t_ns) { recorder_.close(t_ns); }
    // Ready for the next response on a keep-alive connection.
    void reset() {
        parser_.reset();
        recorder_.reset();
        t_headers_ns_ = kNoTime;
        error_body_.clear();
        body_start_.clear();
    }

    const Http1ResponseParser& parser() const { return parser_; }
    StreamRecorder& recorder() { return recorder_; }
    const StreamRecorder& recorder() const { return recorder_; }
    int64_t t_headers_ns() const { return t_headers_ns_; }
    const std::string& error_body() const { return error_body_; }
    const std::string& body_start() const { return body_start_; }

private:
    Http1ResponseParser parser_;
    StreamRecorder recorder_;
    int64_t t_headers_ns_ = kNoTime;
    std::string error_body_;
    std::string body_start_;
};

}  // namespace pytps
