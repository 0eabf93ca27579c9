// Differential fuzzer for pytps::Http1ResponseParser: the same bytes fed whole, split in
// two at a fuzzer-chosen point, one byte at a time (with empty feeds between), and again
// on a reset() parser must give the same status, headers, decoded body and done/failed
// state; when nothing failed, the same bytes consumed, keep-alive and framing read-outs.
// (Where an error is *found* may depend on the split, e.g. a status line that cannot
// start "HTTP/1." fails as soon as its first bytes arrive, so error text is not compared.)
//
// Input: byte 0 picks the limits (bit 0: tiny max_header_bytes, bit 1: tiny max_headers,
// bit 2: tiny max_chunk_line_bytes; bit 3: call finish_eof at the end), bytes 1-2 the
// split point, the rest is the response.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/http1_response.hpp"

namespace {

using pytps::Http1ResponseParser;

struct Outcome {
    int status;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    size_t consumed;
    bool headers_done, done, failed, keep_alive, chunked;
    int64_t content_length;
    uint64_t body_bytes;
};

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "http fuzz: %s\n", what);
    std::abort();
}

// Feeds the chunks [cuts[i], cuts[i+1]) of s until one is not wholly consumed.
Outcome run(Http1ResponseParser& p, const std::string& s, const std::vector<size_t>& cuts, bool eof) {
    Outcome out{};
    size_t consumed = 0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        // Each chunk in its own allocation, so reading past a chunk's end is an ASan error.
        std::vector<char> owned(s.begin() + static_cast<long>(cuts[i]), s.begin() + static_cast<long>(cuts[i + 1]));
        const size_t used = p.feed(owned.data(), owned.size(), [&](const char* d, size_t n) {
            if (n == 0) fail("empty body piece");
            if (d < owned.data() || d + n > owned.data() + owned.size()) fail("body view outside the input");
            out.body.append(d, n);
        });
        if (used > owned.size()) fail("consumed more than fed");
        consumed += used;
        if (used < owned.size()) {
            if (!p.message_done() && !p.failed()) fail("short feed while neither done nor failed");
            break;
        }
    }
    if (eof) p.finish_eof();
    out.status = p.status();
    out.headers = p.headers();
    out.consumed = consumed;
    out.headers_done = p.headers_done();
    out.done = p.message_done();
    out.failed = p.failed();
    out.keep_alive = p.keep_alive();
    out.chunked = p.chunked();
    out.content_length = p.content_length();
    out.body_bytes = p.body_bytes();

    if (out.failed == p.error().empty()) fail("error() empty exactly when failed() is false is violated");
    if (out.done && out.failed) fail("done and failed");
    if (out.failed && out.keep_alive) fail("keep_alive after an error");
    if (out.body_bytes != out.body.size()) fail("body_bytes disagrees with the body delivered");
    if (out.content_length >= 0 && out.body.size() > static_cast<uint64_t>(out.content_length))
        fail("more body than Content-Length");
    size_t header_bytes = 0;
    for (const auto& h : out.headers) {
        header_bytes += h.first.size() + h.second.size();
        for (char c : h.first)
            if (c >= 'A' && c <= 'Z') fail("header name not lowercased");
    }
    if (header_bytes > p.max_header_bytes()) fail("headers bigger than max_header_bytes");
    if (out.status != 0 && (out.status < 200 || out.status > 999)) fail("status out of range");
    if (eof && !out.done && !out.failed) fail("finish_eof left the message open");
    return out;
}

void expect_same(const Outcome& a, const Outcome& b, const char* how) {
    bool same = a.status == b.status && a.headers == b.headers && a.body == b.body && a.done == b.done &&
                a.failed == b.failed && a.headers_done == b.headers_done;
    if (same && !a.failed)
        same = a.consumed == b.consumed && a.keep_alive == b.keep_alive && a.chunked == b.chunked &&
               a.content_length == b.content_length && a.body_bytes == b.body_bytes;
    if (same) return;
    std::fprintf(stderr,
                 "Http1ResponseParser mismatch (%s): status %d vs %d, headers %zu vs %zu, body %zu vs %zu, "
                 "done %d vs %d, failed %d vs %d, consumed %zu vs %zu\n",
                 how, a.status, b.status, a.headers.size(), b.headers.size(), a.body.size(), b.body.size(), a.done,
                 b.done, a.failed, b.failed, a.consumed, b.consumed);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    const size_t max_header_bytes = (data[0] & 1) ? 64 : Http1ResponseParser::kDefaultMaxHeaderBytes;
    const size_t max_headers = (data[0] & 2) ? 3 : Http1ResponseParser::kDefaultMaxHeaders;
    const size_t max_chunk_line = (data[0] & 4) ? 8 : Http1ResponseParser::kDefaultMaxChunkLineBytes;
    const bool eof = (data[0] & 8) != 0;
    const std::string s(reinterpret_cast<const char*>(data + 3), size - 3);
    const size_t k = ((size_t(data[1]) << 8) | data[2]) % (s.size() + 1);

    Http1ResponseParser p(max_header_bytes, max_headers, max_chunk_line);
    const Outcome whole = run(p, s, {0, s.size()}, eof);
    p.reset();
    expect_same(whole, run(p, s, {0, k, s.size()}, eof), "split in two");
    if (s.size() <= 4096) {
        p.reset();
        std::vector<size_t> cuts{0};
        for (size_t i = 1; i <= s.size(); ++i) {
            if (i % 7 == 0) cuts.push_back(i - 1);  // an empty feed now and then
            cuts.push_back(i);
        }
        expect_same(whole, run(p, s, cuts, eof), "one byte at a time");
    }
    Http1ResponseParser fresh(max_header_bytes, max_headers, max_chunk_line);
    expect_same(whole, run(fresh, s, {0, k / 2, k, s.size()}, eof), "split in three");
    return 0;
}
