// Incremental HTTP/1.1 response parser (RFC 9112), fed bytes split anywhere; no I/O.
//
// It exists so a transport can hand each socket read to native code in one call and get
// the decoded body back as views into that read, with no Python per read.
//
// Choices where RFC 9112 leaves one open (or where we are stricter than it):
// - Lines end at CRLF or a bare LF (RFC 9112 §2.2 allows recipients to accept LF); a CR
//   anywhere else in the status line or a header line is an error.
// - Status line: "HTTP/1.<digit> <3 digits>[ <reason>]"; the reason may be empty and the
//   space before an empty reason may be missing (common in practice). Status 100-999.
// - Obsolete line folding (a header line starting with SP/HT) is replaced by one SP and
//   joined to the previous header's value, as §5.2 requires of user agents; folding
//   before the first header is an error (§2.2).
// - Header names must be tokens with no whitespace before ':' (§5.1); values are trimmed
//   of SP/HT; a NUL in a value is an error. Names are stored lowercased.
// - 1xx responses (100 Continue, 103 Early Hints) are skipped entirely; 101 Switching
//   Protocols is an error (we never ask for an upgrade).
// - Body framing (§6.3): 204/304 have none (HEAD requests are not supported: pytps never
//   sends them). Transfer-Encoding must be exactly "chunked" (other codings are not
//   decoded, so they are an error rather than a garbled body); with Content-Length too,
//   Transfer-Encoding wins and the connection is not reused. Transfer-Encoding in an
//   HTTP/1.0 response is an error (§6.1). Else Content-Length (digits only; a list or
//   repeats must all agree), else the body runs to the end of the connection.
// - Chunked: hex size (at most kMaxChunkHexDigits digits, value < 2^60), optional
//   whitespace, optional ";extensions" (skipped, not validated), line end. Trailers are
//   skipped unvalidated.
//
// Memory stays bounded whatever the input: the status line and headers together may use
// max_header_bytes (so may the trailers), at most max_headers fields are kept, and a
// chunk-size line may be max_chunk_line_bytes long; the chunk-size line, chunk data and
// trailers are never buffered.
//
// feed() returns the bytes consumed: n, except (a) after the end of the message the rest
// is not consumed (a caller can detect pipelined garbage or a server that ignored
// framing), and (b) on an error it returns the offset of the byte at which the error was
// found. So feed() < n means "done or failed"; after either, feed() consumes nothing
// until reset().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pytps {

class Http1ResponseParser {
public:
    static constexpr size_t kDefaultMaxHeaderBytes = 64 * 1024;
    static constexpr size_t kDefaultMaxHeaders = 100;
    static constexpr size_t kDefaultMaxChunkLineBytes = 64 + 4096;  // size digits + extensions
    static constexpr size_t kMaxChunkHexDigits = 64;                // leading zeros included

    explicit Http1ResponseParser(size_t max_header_bytes = kDefaultMaxHeaderBytes,
                                 size_t max_headers = kDefaultMaxHeaders,
                                 size_t max_chunk_line_bytes = kDefaultMaxChunkLineBytes);

    // on_body(const char*, size_t) gets the decoded body, as views into data (valid during
    // the call only), never empty.
    template <class OnBody>
    size_t feed(const char* data, size_t n, OnBody&& on_body) {
        size_t i = 0;
        while (i < n) {
            switch (state_) {
                case State::head:
                    i = feed_head(data, n, i);
                    break;
                case State::body_length:
                case State::chunk_data: {
                    const size_t left = n - i;
                    const size_t take = remaining_ < left ? static_cast<size_t>(remaining_) : left;
                    on_body(data + i, take);
                    i += take;
                    remaining_ -= take;
                    body_bytes_ += take;
                    if (remaining_ == 0) state_ = state_ == State::chunk_data ? State::chunk_end : State::done;
                    break;
                }
                case State::body_close:
                    on_body(data + i, n - i);
                    body_bytes_ += n - i;
                    i = n;
                    break;
                case State::chunk_line:
                    i = feed_chunk_line(data, n, i);
                    break;
                case State::chunk_end:
                    i = feed_chunk_end(data, n, i);
                    break;
                case State::trailers:
                    i = feed_trailers(data, n, i);
                    break;
                case State::done:
                case State::failed:
                    return i;
            }
        }
        return i;
    }

    // The connection was closed: completes a body delimited by the close; any other
    // unfinished message becomes an error. No-op once done or failed.
    void finish_eof();
    // Ready for the next response on the same connection (limits are kept).
    void reset();

    // The final (non-1xx) response's status once its status line is parsed, else 0.
    int status() const { return status_ >= 200 ? status_ : 0; }
    int minor_version() const { return minor_; }
    const std::vector<std::pair<std::string, std::string>>& headers() const { return headers_; }
    // The first value of a header (name compared case-insensitively), or nullptr.
    const std::string* header(std::string_view name) const;
    bool headers_done() const { return headers_done_; }
    bool message_done() const { return state_ == State::done; }
    // Whether the connection may carry another response after this one.
    bool keep_alive() const { return keep_alive_ && state_ != State::failed; }
    bool chunked() const { return chunked_; }
    int64_t content_length() const { return content_length_; }  // -1: none (or chunked)
    uint64_t body_bytes() const { return body_bytes_; }           // decoded body bytes so far
    int informational() const { return informational_; }         // 1xx responses skipped
    bool failed() const { return state_ == State::failed; }
    const std::string& error() const { return error_; }
    // The failure is the connection ending early (finish_eof), not bytes that broke the framing.
    bool closed_early() const { return state_ == State::failed && closed_early_; }

    size_t max_header_bytes() const { return max_header_bytes_; }

private:
    enum class State : uint8_t { head, body_length, body_close, chunk_line, chunk_data, chunk_end, trailers, done, failed };
    enum class ChunkPhase : uint8_t { digits, space, ext, cr };

    size_t feed_head(const char* data, size_t n, size_t i);
    size_t feed_chunk_line(const char* data, size_t n, size_t i);
    size_t feed_chunk_end(const char* data, size_t n, size_t i);
    size_t feed_trailers(const char* data, size_t n, size_t i);
    bool on_head_line(std::string_view line);
    bool parse_status_line(std::string_view line);
    bool parse_header_line(std::string_view line);
    bool on_head_end();
    bool fail(std::string message);

    size_t max_header_bytes_, max_headers_, max_chunk_line_bytes_;

    State state_ = State::head;
    std::string line_;        // a head line split across feeds
    size_t head_bytes_ = 0;   // status line + headers of the current head so far (or trailers)
    bool status_seen_ = false;
    int status_ = 0;
    int minor_ = 1;
    std::vector<std::pair<std::string, std::string>> headers_;
    bool headers_done_ = false;
    bool keep_alive_ = false;
    bool chunked_ = false;
    int64_t content_length_ = -1;
    uint64_t remaining_ = 0;  // of the Content-Length body or the current chunk
    uint64_t body_bytes_ = 0;
    int informational_ = 0;

    // chunk-size line and chunk-end scanning: byte-wise state, never buffered
    ChunkPhase chunk_phase_ = ChunkPhase::digits;
    size_t chunk_line_bytes_ = 0;
    size_t chunk_digits_ = 0;
    uint64_t chunk_size_ = 0;
    bool chunk_end_cr_ = false;
    // trailers: length and last byte of the current line
    size_t trailer_line_len_ = 0;
    bool trailer_last_cr_ = false;

    bool closed_early_ = false;
    std::string error_;
};

}  // namespace pytps
