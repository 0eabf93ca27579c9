#include "core/http1_request.hpp"

#include <algorithm>
#include <cstdlib>

namespace pytps {

namespace {

bool ieq(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
        if (x != y) return false;
    }
    return true;
}

// True when the comma-separated header value holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
    size_t i = 0;
    while (i <= value.size()) {
        size_t j = value.find(',', i);
        if (j == std::string_view::npos) j = value.size();
        std::string_view part = value.substr(i, j - i);
        while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
        while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
        if (ieq(part, token)) return true;
        i = j + 1;
    }
    return false;
}

HttpParse fail(int code, const char* msg, int& status, std::string& message) {
    status = code;
    message = msg;
    return HttpParse::error;
}

int hex_digit(char c) {
    return (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}

}  // namespace

void HttpRequestParser::reset() {
    phase_ = Phase::head;
    req_ = HttpRequest{};
    scan_ = pos_ = length_ = consumed_ = 0;
}

size_t HttpRequestParser::find_crlf(std::string_view buf) {
    const size_t at = buf.find("\r\n", scan_);
    if (at == std::string_view::npos) {
        work_ += buf.size() - scan_;
        // A '\r' as the last byte may be the first half of the CRLF.
        scan_ = buf.size() > pos_ ? std::max(pos_, buf.size() - 1) : pos_;
        return at;
    }
    work_ += at + 2 - scan_;
    return at;
}

HttpParse HttpRequestParser::parse(std::string_view buf, int& status, std::string& message) {
    if (buf.size() < scan_ || buf.size() < pos_) reset();  // not the bytes of the last call: start over
    switch (phase_) {
        case Phase::head: {
            // The blank line may straddle the previous read's end: resume 3 bytes back.
            const size_t from = scan_ >= 3 ? scan_ - 3 : 0;
            const size_t head_end = buf.find("\r\n\r\n", from);
            if (head_end == std::string_view::npos) {
                work_ += buf.size() - from;
                scan_ = buf.size();
                // A head of kMaxHeaderBytes is allowed, and its blank line may still be arriving: only
                // when even its last 3 bytes are in without one is the head known to be too large.
                if (buf.size() > kMaxHeaderBytes + 3) return fail(431, "request headers too large", status, message);
                return HttpParse::need_more;
            }
            work_ += head_end + 4 - from;
            return parse_head(buf, head_end, status, message);
        }
        case Phase::length_body:
            if (buf.size() < pos_ + length_) return HttpParse::need_more;
            req_.body.assign(buf.data() + pos_, length_);
            work_ += length_;
            consumed_ = pos_ + length_;
            phase_ = Phase::done;
            return HttpParse::complete;
        case Phase::chunk_size:
        case Phase::chunk_data:
        case Phase::trailer:
            return parse_chunked(buf, status, message);
        case Phase::done:
            return HttpParse::complete;
    }
    return HttpParse::need_more;
}

HttpParse HttpRequestParser::parse_head(std::string_view buf, size_t head_end, int& status, std::string& message) {
    if (head_end > kMaxHeaderBytes) return fail(431, "request headers too large", status, message);
    req_ = HttpRequest{};
    work_ += head_end;
    HttpRequest& req = req_;
    std::string_view head = buf.substr(0, head_end);
    size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || sp1 == 0 || sp2 == sp1 + 1)
        return fail(400, "malformed request line", status, message);
    std::string_view version = line.substr(sp2 + 1);
    if (version == "HTTP/1.1") {
        req.minor_version = 1;
    } else if (version == "HTTP/1.0") {
        req.minor_version = 0;
    } else if (version.substr(0, 5) == "HTTP/") {
        return fail(505, "HTTP version not supported", status, message);
    } else {
        return fail(400, "malformed request line", status, message);
    }
    req.method = std::string(line.substr(0, sp1));
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    req.path = std::string(target.substr(0, target.find('?')));

    bool chunked = false, have_length = false;
    size_t length = 0;
    bool conn_close = false, conn_keep = false;
    size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
    while (pos < head.size()) {
        size_t e = head.find("\r\n", pos);
        if (e == std::string_view::npos) e = head.size();
        std::string_view h = head.substr(pos, e - pos);
        pos = e + 2;
        size_t colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0 || h[colon - 1] == ' ')
            return fail(400, "malformed header line", status, message);
        std::string_view name = h.substr(0, colon);
        std::string_view value = h.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        if (ieq(name, "content-length")) {
            if (value.empty() || value.size() > 12) return fail(400, "invalid Content-Length", status, message);
            size_t n = 0;
            for (char c : value) {
                if (c < '0' || c > '9') return fail(400, "invalid Content-Length", status, message);
                n = n * 10 + static_cast<size_t>(c - '0');
            }
            if (have_length && n != length) return fail(400, "conflicting Content-Length headers", status, message);
            have_length = true;
            length = n;
        } else if (ieq(name, "transfer-encoding")) {
            if (!ieq(value, "chunked")) return fail(501, "only the chunked transfer coding is supported", status, message);
            chunked = true;
        } else if (ieq(name, "connection")) {
            conn_close = conn_close || has_token(value, "close");
            conn_keep = conn_keep || has_token(value, "keep-alive");
        } else if (ieq(name, "expect")) {
            req.expect_continue = ieq(value, "100-continue");
        }
    }
    if (chunked && have_length) return fail(400, "both Content-Length and Transfer-Encoding given", status, message);
    req.keep_alive = req.minor_version == 1 ? !conn_close : (conn_keep && !conn_close);
    req.headers_done = true;

    pos_ = scan_ = head_end + 4;
    if (chunked) {
        phase_ = Phase::chunk_size;
        return parse_chunked(buf, status, message);
    }
    if (length > kMaxBodyBytes) return fail(413, "request body too large", status, message);
    length_ = length;
    phase_ = Phase::length_body;
    return parse(buf, status, message);
}

// The chunked body, one line or chunk at a time from where the last call stopped.
HttpParse HttpRequestParser::parse_chunked(std::string_view buf, int& status, std::string& message) {
    for (;;) {
        if (phase_ == Phase::chunk_size) {
            const size_t eol = find_crlf(buf);
            if (eol == std::string_view::npos) return HttpParse::need_more;
            std::string_view line = buf.substr(pos_, eol - pos_);
            size_t semi = line.find(';');  // chunk extensions are ignored
            if (semi != std::string_view::npos) line = line.substr(0, semi);
            if (line.empty() || line.size() > 8) return fail(400, "invalid chunk size in the request body", status, message);
            size_t size = 0;
            for (char c : line) {
                const int h = hex_digit(c);
                if (h < 0) return fail(400, "invalid chunk size in the request body", status, message);
                size = size * 16 + static_cast<size_t>(h);
            }
            pos_ = scan_ = eol + 2;
            if (size == 0) {
                phase_ = Phase::trailer;
                continue;
            }
            if (req_.body.size() + size > kMaxBodyBytes) return fail(413, "request body too large", status, message);
            length_ = size;
            phase_ = Phase::chunk_data;
        } else if (phase_ == Phase::chunk_data) {
            if (buf.size() < pos_ + length_ + 2) return HttpParse::need_more;
            if (buf.substr(pos_ + length_, 2) != "\r\n")
                return fail(400, "chunk not followed by CRLF in the request body", status, message);
            req_.body.append(buf.data() + pos_, length_);
            work_ += length_ + 2;
            pos_ = scan_ = pos_ + length_ + 2;
            phase_ = Phase::chunk_size;
        } else {
            // Trailer fields end with an empty line.
            const size_t e = find_crlf(buf);
            if (e == std::string_view::npos) return HttpParse::need_more;
            const bool empty = e == pos_;
            pos_ = scan_ = e + 2;
            if (empty) {
                consumed_ = pos_;
                phase_ = Phase::done;
                return HttpParse::complete;
            }
        }
    }
}

HttpParse parse_http_request(std::string_view buf, HttpRequest& req, size_t& consumed, int& status,
                             std::string& message) {
    HttpRequestParser p;
    const HttpParse r = p.parse(buf, status, message);
    if (r == HttpParse::complete || p.request().headers_done) req = std::move(p.request());
    if (r == HttpParse::complete) consumed = p.consumed();
    return r;
}

}  // namespace pytps
