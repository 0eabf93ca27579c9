#include "core/http1_response.hpp"

namespace pytps {

namespace {

bool is_ows(char c) { return c == ' ' || c == '\t'; }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

// The offending text for an error message: at most 60 bytes, non-printables escaped.
std::string quote(std::string_view s) {
    static const char digits[] = "0123456789abcdef";
    std::string out = "'";
    const size_t shown = s.size() < 60 ? s.size() : 60;
    for (size_t i = 0; i < shown; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
    if (shown < s.size()) out += "...";
    out += "'";
    return out;
}

// Calls f(element) for each non-empty element of a comma-separated list (RFC 9110 §5.6.1).
template <class F>
bool for_each_element(std::string_view list, F&& f) {
    while (true) {
        const size_t comma = list.find(',');
        const std::string_view el = trim(list.substr(0, comma));
        if (!el.empty() && !f(el)) return false;
        if (comma == std::string_view::npos) return true;
        list.remove_prefix(comma + 1);
    }
}

}  // namespace

Http1ResponseParser::Http1ResponseParser(size_t max_header_bytes, size_t max_headers, size_t max_chunk_line_bytes)
    : max_header_bytes_(max_header_bytes), max_headers_(max_headers), max_chunk_line_bytes_(max_chunk_line_bytes) {}

void Http1ResponseParser::reset() {
    state_ = State::head;
    line_.clear();
    if (line_.capacity() > 4096) std::string().swap(line_);
    head_bytes_ = 0;
    status_seen_ = false;
    status_ = 0;
    minor_ = 1;
    headers_.clear();
    headers_done_ = false;
    keep_alive_ = false;
    chunked_ = false;
    content_length_ = -1;
    remaining_ = 0;
    body_bytes_ = 0;
    informational_ = 0;
    chunk_phase_ = ChunkPhase::digits;
    chunk_line_bytes_ = 0;
    chunk_digits_ = 0;
    chunk_size_ = 0;
    chunk_end_cr_ = false;
    trailer_line_len_ = 0;
    trailer_last_cr_ = false;
    error_.clear();
    closed_early_ = false;
}

bool Http1ResponseParser::fail(std::string message) {
    state_ = State::failed;
    error_ = std::move(message);
    line_.clear();
    return false;
}

const std::string* Http1ResponseParser::header(std::string_view name) const {
    for (const auto& h : headers_)
        if (iequals(h.first, name)) return &h.second;
    return nullptr;
}

void Http1ResponseParser::finish_eof() {
    if (state_ != State::done && state_ != State::failed && state_ != State::body_close) closed_early_ = true;
    switch (state_) {
        case State::done:
        case State::failed:
            return;
        case State::body_close:
            state_ = State::done;
            return;
        case State::head:
            if (!status_seen_ && head_bytes_ == 0 && informational_ == 0) {
                fail("connection closed before the end of the response (no response bytes were received)");
            } else {
                fail("connection closed before the end of the response (inside the status line or headers)");
            }
            return;
        case State::body_length:
            fail("connection closed before the end of the response (" + std::to_string(body_bytes_) + " of " +
                 std::to_string(content_length_) + " Content-Length body bytes received)");
            return;
        default:
            fail("connection closed before the end of the response (inside the chunked body, after " +
                 std::to_string(body_bytes_) + " body bytes)");
            return;
    }
}

size_t Http1ResponseParser::feed_head(const char* data, size_t n, size_t i) {
    const char* start = data + i;
    const char* lf = static_cast<const char*>(std::memchr(start, '\n', n - i));
    const size_t add = lf ? static_cast<size_t>(lf - start) + 1 : n - i;
    if (head_bytes_ + add > max_header_bytes_) {
        const size_t pos = i + (max_header_bytes_ - head_bytes_);
        fail("headers too large: the status line and headers exceed " + std::to_string(max_header_bytes_) +
             " bytes (raise max_header_bytes if the server really sends that much)");
        return pos;
    }
    head_bytes_ += add;
    if (!lf) {
        line_.append(start, add);
        // Not waiting for a whole line of garbage when it cannot be a status line.
        if (!status_seen_) {
            const size_t k = line_.size() < 7 ? line_.size() : 7;
            if (line_.compare(0, k, "HTTP/1.", k) != 0) {
                fail("bad status line starting " + quote(line_) + ": expected 'HTTP/1.x NNN reason' (is this an HTTP/1.x server?)");
                return i;
            }
        }
        return n;
    }
    std::string_view line;
    if (line_.empty()) {
        line = std::string_view(start, static_cast<size_t>(lf - start));
    } else {
        line_.append(start, static_cast<size_t>(lf - start));
        line = line_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool ok = on_head_line(line);
    line_.clear();
    return ok ? static_cast<size_t>(lf - data) + 1 : static_cast<size_t>(lf - data);
}

bool Http1ResponseParser::on_head_line(std::string_view line) {
    if (std::memchr(line.data(), '\r', line.size()))
        return fail("bare CR in a " + std::string(status_seen_ ? "header" : "status") + " line " + quote(line));
    if (!status_seen_) return parse_status_line(line);
    if (line.empty()) return on_head_end();
    return parse_header_line(line);
}

bool Http1ResponseParser::parse_status_line(std::string_view line) {
    auto digit = [&](size_t k) { return k < line.size() && line[k] >= '0' && line[k] <= '9'; };
    // "HTTP/1.x SSS" then end of line or " reason"
    const bool ok = line.size() >= 12 && line.compare(0, 7, "HTTP/1.") == 0 && digit(7) && line[8] == ' ' &&
                    digit(9) && digit(10) && digit(11) && line[9] != '0' && (line.size() == 12 || line[12] == ' ');
    if (!ok) return fail("bad status line " + quote(line) + ": expected 'HTTP/1.x NNN reason'");
    minor_ = line[7] - '0';
    status_ = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    status_seen_ = true;
    if (std::memchr(line.data(), '\0', line.size())) return fail("NUL in the status line " + quote(line));
    return true;
}

bool Http1ResponseParser::parse_header_line(std::string_view line) {
    if (is_ows(line[0])) {
        if (headers_.empty())
            return fail("whitespace before the first header line " + quote(line) + " (obsolete line folding)");
        // RFC 9112 §5.2: a user agent replaces obs-fold with SP.
        const std::string_view more = trim(line);
        if (std::memchr(more.data(), '\0', more.size())) return fail("NUL in a header value " + quote(line));
        std::string& value = headers_.back().second;
        if (!more.empty()) {
            if (!value.empty()) value += ' ';
            value.append(more.data(), more.size());
        }
        return true;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fail("header line without ':' " + quote(line));
    const std::string_view name = line.substr(0, colon);
    if (name.empty()) return fail("header line with an empty name " + quote(line));
    if (is_ows(name.back())) return fail("whitespace before ':' in the header line " + quote(line));
    for (const char c : name)
        if (!is_tchar(c)) return fail("invalid character in the header name " + quote(name));
    const std::string_view value = trim(line.substr(colon + 1));
    if (std::memchr(value.data(), '\0', value.size())) return fail("NUL in the value of header " + quote(name));
    if (headers_.size() >= max_headers_)
        return fail("too many headers: more than " + std::to_string(max_headers_) + " header fields");
    std::string lname(name);
    for (char& c : lname) c = lower(c);
    headers_.emplace_back(std::move(lname), std::string(value));
    return true;
}

bool Http1ResponseParser::on_head_end() {
    if (status_ < 200) {
        if (status_ == 101) return fail("unexpected 101 Switching Protocols: no upgrade was requested");
        // 1xx: the final response follows; nothing of this one is kept.
        headers_.clear();
        status_seen_ = false;
        status_ = 0;
        head_bytes_ = 0;
        ++informational_;
        return true;
    }
    headers_done_ = true;

    bool close = false, keep = false;
    for (const auto& h : headers_) {
        if (h.first != "connection") continue;
        for_each_element(h.second, [&](std::string_view token) {
            if (iequals(token, "close")) close = true;
            if (iequals(token, "keep-alive")) keep = true;
            return true;
        });
    }
    keep_alive_ = !close && (minor_ >= 1 || keep);

    if (status_ == 204 || status_ == 304) {
        state_ = State::done;
        return true;
    }

    bool has_te = false, has_cl = false;
    std::string te_bad;
    size_t te_count = 0;
    std::string_view cl_first;
    for (const auto& h : headers_) {
        if (h.first == "transfer-encoding") {
            has_te = true;
            for_each_element(h.second, [&](std::string_view coding) {
                ++te_count;
                if (!iequals(coding, "chunked") && te_bad.empty()) te_bad = std::string(coding);
                return true;
            });
        } else if (h.first == "content-length") {
            has_cl = true;
            bool ok = true;
            const bool listed = for_each_element(h.second, [&](std::string_view v) {
                if (cl_first.empty()) cl_first = v;
                else if (v != cl_first) ok = false;
                return ok;
            });
            if (!listed || !ok)
                return fail("differing Content-Length values " + quote(cl_first) + " and " + quote(h.second));
            if (h.second.find_first_not_of(" \t,") == std::string::npos)
                return fail("empty Content-Length header");
        }
    }

    if (has_te) {
        if (minor_ == 0) return fail("Transfer-Encoding in an HTTP/1.0 response (the framing cannot be trusted)");
        if (!te_bad.empty())
            return fail("unsupported Transfer-Encoding " + quote(te_bad) + ": only 'chunked' is decoded");
        if (te_count == 0) return fail("empty Transfer-Encoding header");
        if (te_count != 1) return fail("Transfer-Encoding applies 'chunked' more than once");
        chunked_ = true;
        // RFC 9112 §6.1: both present smells of response splitting; do not reuse the connection.
        if (has_cl) keep_alive_ = false;
        state_ = State::chunk_line;
        return true;
    }
    if (has_cl) {
        uint64_t v = 0;
        for (const char c : cl_first) {
            if (c < '0' || c > '9') return fail("bad Content-Length " + quote(cl_first) + ": expected digits only");
            if (v > (uint64_t(INT64_MAX) - 9) / 10) return fail("Content-Length " + quote(cl_first) + " is too large");
            v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        content_length_ = static_cast<int64_t>(v);
        remaining_ = v;
        state_ = v == 0 ? State::done : State::body_length;
        return true;
    }
    // The body runs to the end of the connection, which therefore cannot be reused.
    keep_alive_ = false;
    state_ = State::body_close;
    return true;
}

size_t Http1ResponseParser::feed_chunk_line(const char* data, size_t n, size_t i) {
    for (; i < n; ++i) {
        const char c = data[i];
        if (++chunk_line_bytes_ > max_chunk_line_bytes_) {
            fail("chunk-size line longer than " + std::to_string(max_chunk_line_bytes_) + " bytes");
            return i;
        }
        switch (chunk_phase_) {
            case ChunkPhase::digits: {
                const int h = hex_value(c);
                if (h >= 0) {
                    if (++chunk_digits_ > kMaxChunkHexDigits) {
                        fail("chunk size with more than " + std::to_string(kMaxChunkHexDigits) + " hex digits");
                        return i;
                    }
                    if (chunk_size_ >= (uint64_t(1) << 56)) {
                        fail("chunk size too large (2^60 bytes or more)");
                        return i;
                    }
                    chunk_size_ = chunk_size_ * 16 + static_cast<uint64_t>(h);
                    continue;
                }
                if (chunk_digits_ == 0) {
                    fail("bad chunk-size line: expected hex digits, got " + quote(std::string_view(&data[i], 1)));
                    return i;
                }
                chunk_phase_ = ChunkPhase::space;  // past the digits: the size's tail reads c
            }
                [[fallthrough]];
            case ChunkPhase::space:
                if (is_ows(c)) continue;
                if (c == ';') chunk_phase_ = ChunkPhase::ext;
                else if (c == '\r') chunk_phase_ = ChunkPhase::cr;
                else if (c == '\n') break;
                else {
                    fail("bad chunk-size line: unexpected " + quote(std::string_view(&data[i], 1)) + " after the size");
                    return i;
                }
                continue;
            case ChunkPhase::ext:
                if (c == '\r') chunk_phase_ = ChunkPhase::cr;
                else if (c == '\n') break;
                continue;
            case ChunkPhase::cr:
                if (c == '\n') break;
                fail("bad chunk-size line: CR not followed by LF");
                return i;
        }
        // The line ended at data[i].
        const uint64_t size = chunk_size_;
        chunk_phase_ = ChunkPhase::digits;
        chunk_line_bytes_ = 0;
        chunk_digits_ = 0;
        chunk_size_ = 0;
        if (size == 0) {
            state_ = State::trailers;
            head_bytes_ = 0;  // the trailers get their own max_header_bytes
        } else {
            state_ = State::chunk_data;
            remaining_ = size;
        }
        return i + 1;
    }
    return n;
}

size_t Http1ResponseParser::feed_chunk_end(const char* data, size_t n, size_t i) {
    const char c = data[i];
    if (c == '\n') {
        chunk_end_cr_ = false;
        state_ = State::chunk_line;
        return i + 1;
    }
    if (c == '\r' && !chunk_end_cr_) {
        chunk_end_cr_ = true;
        return i + 1;
    }
    fail("chunk data not followed by CRLF (got " + quote(std::string_view(&data[i], 1)) +
         "): the chunk size does not match its data");
    (void)n;
    return i;
}

size_t Http1ResponseParser::feed_trailers(const char* data, size_t n, size_t i) {
    while (i < n) {
        const char* start = data + i;
        const char* lf = static_cast<const char*>(std::memchr(start, '\n', n - i));
        const size_t len = lf ? static_cast<size_t>(lf - start) : n - i;
        if (head_bytes_ + len + (lf ? 1 : 0) > max_header_bytes_) {
            fail("trailers too large: more than " + std::to_string(max_header_bytes_) + " bytes");
            return i + (max_header_bytes_ - head_bytes_);
        }
        head_bytes_ += len + (lf ? 1 : 0);
        if (len > 0) {
            trailer_line_len_ += len;
            trailer_last_cr_ = start[len - 1] == '\r';
        }
        if (!lf) return n;
        const bool empty = trailer_line_len_ == 0 || (trailer_line_len_ == 1 && trailer_last_cr_);
        trailer_line_len_ = 0;
        trailer_last_cr_ = false;
        i += len + 1;
        if (empty) {
            state_ = State::done;
            return i;
        }
    }
    return n;
}

}  // namespace pytps
