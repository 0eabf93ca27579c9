// Fuzzer for pytps::parse_http_request, the emulator's HTTP/1.1 request parser. The emulator
// keeps a connection's bytes in one buffer, calls the parser each time a read appends to it,
// and on `complete` erases `consumed` bytes and parses again (pipelining). So the checks:
//
// - each result on its own: consumed <= size and > 0 when complete, a known status and a
//   message on error, a body never longer than what was consumed;
// - deterministic: the same bytes parse the same twice (into a reused or a fresh request);
// - split anywhere (the buffer as it stands after each read): whatever a prefix settles
//   (complete or error) is what the whole input says, and a prefix that holds the whole
//   first request is complete; every prefix of an input that needs more needs more too;
// - pipelined: requests parsed off the front one after another always make progress and
//   never consume more than there is.
//
// Input: bytes 0-3 pick two split points (all prefixes are tried for short inputs); when bit
// 0 of byte 4 is set, a padding header is inserted after the first line so that the head
// ends within 8 bytes of kMaxHeaderBytes (byte 5 says where) and the prefixes around the
// limit are tried, so the limit is fuzzed without 64 KiB inputs; the rest is what the
// client sent.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/http1_request.hpp"

namespace {

using pytps::HttpParse;
using pytps::HttpRequest;

struct Outcome {
    HttpParse result = HttpParse::need_more;
    size_t consumed = 0;
    int status = 0;
    std::string message;
    HttpRequest req;
};

[[noreturn]] void fail(const char* what, size_t at = 0) {
    std::fprintf(stderr, "http_request fuzz: %s (prefix of %zu bytes)\n", what, at);
    std::abort();
}

Outcome parse(std::string_view buf, HttpRequest* reuse = nullptr) {
    Outcome o;
    HttpRequest fresh;
    HttpRequest& req = reuse ? *reuse : fresh;
    o.result = pytps::parse_http_request(buf, req, o.consumed, o.status, o.message);
    o.req = req;
    switch (o.result) {
        case HttpParse::complete:
            if (o.consumed == 0 || o.consumed > buf.size()) fail("complete with consumed out of (0, size]", buf.size());
            if (!o.req.headers_done) fail("complete without headers_done", buf.size());
            if (o.req.body.size() > o.consumed) fail("a body longer than the bytes consumed", buf.size());
            if (o.req.method.empty()) fail("complete with no method", buf.size());
            if (o.req.minor_version != 0 && o.req.minor_version != 1) fail("HTTP/1.x minor version not 0 or 1", buf.size());
            if (buf.substr(0, o.consumed).find("\r\n\r\n") == std::string_view::npos)
                fail("complete before the end of the head", buf.size());
            break;
        case HttpParse::error:
            if (o.status != 400 && o.status != 413 && o.status != 431 && o.status != 501 && o.status != 505)
                fail("an error status the parser does not document", buf.size());
            if (o.message.empty()) fail("an error without a message", buf.size());
            break;
        case HttpParse::need_more:
            break;
    }
    return o;
}

bool same_request(const HttpRequest& a, const HttpRequest& b) {
    return a.method == b.method && a.path == b.path && a.minor_version == b.minor_version &&
           a.keep_alive == b.keep_alive && a.expect_continue == b.expect_continue &&
           a.headers_done == b.headers_done && a.body == b.body;
}

bool same(const Outcome& a, const Outcome& b) {
    if (a.result != b.result) return false;
    if (a.result == HttpParse::complete) return a.consumed == b.consumed && same_request(a.req, b.req);
    if (a.result == HttpParse::error) return a.status == b.status;
    return true;
}

// What the buffer held after a read that brought it to `n` bytes must agree with the whole.
void check_prefix(std::string_view all, const Outcome& whole, size_t n) {
    // Each prefix in its own allocation, so that reading past its end is an ASan error.
    const std::vector<char> owned(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const Outcome p = parse(std::string_view(owned.data(), owned.size()));
    if (p.result != HttpParse::need_more && !same(p, whole)) fail("a prefix settles differently from the whole", n);
    if (whole.result == HttpParse::need_more && p.result != HttpParse::need_more)
        fail("a prefix settles but the whole needs more", n);
    if (whole.result == HttpParse::complete && n >= whole.consumed && p.result != HttpParse::complete)
        fail("a prefix holding the whole first request is not complete", n);
}

// Inserts "X-Pad: aaa...\r\n" after the first CRLF (or appends it) so that the first blank
// line, or else the end of the input, lands at kMaxHeaderBytes + delta.
std::string pad_to_limit(std::string s, int delta) {
    size_t at = s.find("\r\n");
    at = at == std::string::npos ? s.size() : at + 2;
    const std::string opener = at == s.size() ? "\r\nX-Pad: " : "X-Pad: ";
    const size_t end = s.find("\r\n\r\n");
    const size_t mark = end == std::string::npos ? s.size() : end;
    const size_t fixed = opener.size() + (at == s.size() ? 0 : 2);
    const int64_t want = static_cast<int64_t>(pytps::kMaxHeaderBytes) + delta - static_cast<int64_t>(mark) -
                         static_cast<int64_t>(fixed);
    if (want < 0) return s;
    std::string pad = opener + std::string(static_cast<size_t>(want), 'a') + (at == s.size() ? "" : "\r\n");
    s.insert(at, pad);
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 6) return 0;
    const bool at_limit = data[4] & 1;
    std::string s(reinterpret_cast<const char*>(data + 6), size - 6);
    if (at_limit) s = pad_to_limit(std::move(s), static_cast<int>(data[5] % 16) - 8);
    const std::string_view all(s);

    const Outcome whole = parse(all);
    if (!same(whole, parse(all))) fail("the same bytes parse differently", all.size());
    HttpRequest reused;
    reused.method = "STALE";
    reused.body = "stale";
    reused.headers_done = true;
    const Outcome again = parse(all, &reused);
    if (!same(whole, again)) fail("a reused request parses differently", all.size());

    if (all.size() <= 512) {
        for (size_t n = 0; n < all.size(); ++n) check_prefix(all, whole, n);
    } else {
        if (at_limit)  // every read that could end right around the limit
            for (size_t n = pytps::kMaxHeaderBytes - 12; n <= pytps::kMaxHeaderBytes + 12 && n < all.size(); ++n)
                check_prefix(all, whole, n);
        check_prefix(all, whole, ((size_t(data[0]) << 8) | data[1]) % (all.size() + 1));
        check_prefix(all, whole, ((size_t(data[2]) << 8) | data[3]) % (all.size() + 1));
    }

    // Pipelining: erase what each complete request consumed and parse the rest.
    size_t off = 0;
    for (Outcome o = whole; o.result == HttpParse::complete;) {
        off += o.consumed;
        if (off > all.size()) fail("pipelined requests consumed more than the input", off);
        o = parse(all.substr(off));
    }
    return 0;
}
