// libFuzzer harness for pytps::Connection (csrc/client/connection*.cpp), the native client's
// per-connection state machine, driven through the scripted SocketOps of
// tests/cpp/connection_harness.hpp: fuzzed server bytes (raw, or pieces of a valid response so
// the fuzzer reaches the body quickly) and fuzzed recv/send results (EAGAIN, short writes, EOF,
// resets, EINTR, a socket that stops taking bytes), on a new connection or a kept-alive one.
//
// Checked on every input, besides no crash, UB or leak (ASan, UBSan, LeakSanitizer):
// - the connection reaches a terminal outcome: by itself, or at the latest when its deadline
//   fires with nothing left to read or write;
// - only the transitions connection.hpp lists are walked, and the outcome matches the state;
// - what was sent is a prefix of the request, in order, never a byte twice;
// - stamps never go backwards: event times, read stamps, kernel stamps (<= the read's own),
//   head before events, t_send and every stamp <= t_done;
// - a kept connection had its request all written and its response done with keep-alive; a
//   response completed before the request was all written has no t_send (docs/metrics.md);
// - a resend (retry_stale) only from a kept-alive connection that got no byte of a response;
//   no_response only with no byte read; the size cap only past it.
//
// The client sources are compiled into this file, so tests/fuzz/run.sh builds it as it builds
// the others (it compiles csrc/core only); TLS is off (no PYTPS_HAVE_OPENSSL): tls.cpp's stubs.
//
// Input: 5 header bytes, then ops of one byte (kind in the low 4 bits, argument in the high 4):
//   [0] flags: 1 kept-alive connection, 2 kernel stamps, 4 small read buffer, 8 small size
//       cap, 0x30 connect (0 ok, 1 refused, 2 hang-up, 3 socket fails at once), 0x40 EAGAIN
//       before every call, 0x80 a total timeout
//   [1] request body size / 16   [2] read buffer bytes (small buffer)   [3] size cap / 16
//   [4] the valid response: bit 0 chunked, bits 1-3 events
//   ops: 0-2 recv the next 2^arg bytes of the valid response, 3 recv the next N input bytes
//   (N: the next byte), 4 recv EAGAIN, 5 EOF, 6 recv error, 7-8 send at most 2^arg bytes,
//   9 send EAGAIN, 10 send error, 11 send blocked, 12 the socket takes 2^arg more bytes then
//   blocks, 13 recv the rest of the valid response, 14-15 recv a canned piece (table below).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "../cpp/connection_harness.hpp"
#include "client/connection.cpp"
#include "client/connection_tls.cpp"
#include "client/tls.cpp"

namespace harness {
int failures = 0;
int checks = 0;
const char* current_test = "fuzz_connection";
std::set<std::pair<ConnState, ConnState>>& transitions_seen() {
    static std::set<std::pair<ConnState, ConnState>> seen;
    return seen;
}
}  // namespace harness

namespace {

using namespace harness;
using K = Outcome::Kind;

[[noreturn]] void violated(const char* what, const std::string& trace) {
    std::fprintf(stderr, "connection fuzz: %s (states %s)\n", what, trace.c_str());
    std::abort();
}

struct Input {
    const uint8_t* p;
    size_t n;
    bool empty() const { return n == 0; }
    uint8_t byte() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    std::string take(size_t k) {
        k = k < n ? k : n;
        std::string s(reinterpret_cast<const char*>(p), k);
        p += k;
        n -= k;
        return s;
    }
};

// Answers a server may give in pieces the fuzzer would take long to find byte by byte.
const char* const kCanned[] = {
    "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",  // close-delimited
    "HTTP/1.1 500 Internal Server Error\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00",
    "zz\r\n",                                                      // a bad chunk size
    "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n",
};

const std::set<std::pair<std::string, std::string>>& allowed_transitions() {
    static const std::set<std::pair<std::string, std::string>> t = {
        {"connecting", "tls_handshake"}, {"connecting", "writing"},       {"connecting", "failed"},
        {"tls_handshake", "writing"},    {"tls_handshake", "failed"},     {"writing", "reading_head"},
        {"writing", "reading_body"},     {"writing", "closed"},           {"writing", "failed"},
        {"reading_head", "reading_body"}, {"reading_head", "closed"},     {"reading_head", "failed"},
        {"reading_body", "idle"},        {"reading_body", "closed"},      {"reading_body", "failed"},
        {"idle", "writing"},             {"idle", "closed"},
    };
    return t;
}

void check_stamps(const ClientJob& j, const Outcome& o, const std::string& trace) {
    const std::vector<int64_t>& times = j.http->recorder().output_times_ns();
    for (size_t i = 1; i < times.size(); ++i)
        if (times[i] < times[i - 1]) violated("event times go backwards", trace);
    for (size_t i = 1; i < j.recv_ns.size(); ++i)
        if (j.recv_ns[i] < j.recv_ns[i - 1]) violated("read stamps go backwards", trace);
    if (j.recv_kernel_ns.size() != j.recv_ns.size()) violated("a read without its kernel stamp", trace);
    for (size_t i = 0; i < j.recv_ns.size(); ++i)
        if (j.recv_kernel_ns[i] > j.recv_ns[i]) violated("a kernel stamp after the read's own", trace);
    const int64_t t_head = j.http->t_headers_ns();
    if (t_head != ClientJob::kNoTime && !times.empty() && times.front() < t_head)
        violated("an event before the head", trace);
    if (o.t_ns == ClientJob::kNoTime) return;
    if (!times.empty() && times.back() > o.t_ns) violated("an event after t_done", trace);
    if (t_head != ClientJob::kNoTime && t_head > o.t_ns) violated("the head after t_done", trace);
    if (j.t_send_ns != ClientJob::kNoTime && j.t_send_ns > o.t_ns) violated("t_send after t_done", trace);
}

void run(Input in) {
    const uint8_t flags = in.byte();
    const bool reused = flags & 1;
    const size_t body = size_t(in.byte()) * 16;
    const size_t buf_len = (flags & 4) ? 1 + in.byte() % 64 : (in.byte(), size_t(64 * 1024));
    const uint8_t cap = in.byte();
    const uint8_t shape = in.byte();
    const Response valid = sse_response(shape >> 1 & 7, shape & 1);
    size_t valid_off = 0;

    Env e(buf_len);
    if (flags & 2) {
        e.opt.kernel_timestamps = true;
        e.ops.kernel_lag = 500;
    }
    if (flags & 0x80) e.opt.total_timeout_ns = 3'000'000'000;
    auto c = e.make();
    if (reused) {  // a clean first exchange, then the fuzzed one on the kept-alive connection
        e.ops.recvs = {bytes(sse_response(1).bytes)};
        Outcome o = e.open(*c, job(request()));
        if (!o.ended()) o = e.pump(*c);
        if (o.kind != K::completed_keep) violated("the clean first exchange was not kept", e.trace());
        c->take_job();
        e.ops.recvs.clear();
    } else {
        switch (flags >> 4 & 3) {
            case 1: e.ops.connect_err = ECONNREFUSED; break;
            case 2: e.ops.hangup = true; break;
            case 3: e.ops.open_result = OpenResult{-1, false, EMFILE, "socket"}; break;
            default: break;
        }
    }

    if (flags & 8) e.opt.max_response_bytes = size_t(cap) * 16 + 1;  // after the clean exchange

    const int recv_errors[] = {ECONNRESET, EINTR, ETIMEDOUT};
    const int send_errors[] = {EPIPE, ECONNRESET, EINTR};
    const size_t written_before = e.ops.written.size();
    while (!in.empty()) {
        const uint8_t op = in.byte();
        const unsigned arg = op >> 4;
        switch (op & 15) {
            case 0: case 1: case 2: case 13: {
                const size_t want = (op & 15) == 13 ? valid.bytes.size() : size_t(1) << arg;
                const std::string part = valid.bytes.substr(valid_off, want);
                valid_off += part.size();
                if (!part.empty()) e.ops.recvs.push_back(bytes(part));
                break;
            }
            case 3: {
                const std::string raw = in.take(in.byte());
                if (!raw.empty()) e.ops.recvs.push_back(bytes(raw));
                break;
            }
            case 4: e.ops.recvs.push_back(again_recv()); break;
            case 5: e.ops.recvs.push_back(eof()); break;
            case 6: e.ops.recvs.push_back(recv_error(recv_errors[arg % 3])); break;
            case 7: case 8: e.ops.sends.push_back(take(size_t(1) << arg)); break;
            case 9: e.ops.sends.push_back(again_send()); break;
            case 10: e.ops.sends.push_back(send_error(send_errors[arg % 3])); break;
            case 11: e.ops.sends.push_back(blocked()); break;
            case 12: e.ops.write_limit = written_before + (size_t(1) << arg); break;
            default: e.ops.recvs.push_back(bytes(kCanned[arg % (sizeof kCanned / sizeof kCanned[0])])); break;
        }
    }
    e.ops.again_first = flags & 0x40;

    const std::string req = request(body);
    Outcome o = reused ? c->start(job(req, 2)) : e.open(*c, job(req, 2));
    // With nothing left that would wake it, a blocked socket is let go, then the deadline fires:
    // either way the script shrinks or the request ends, so this ends.
    for (int round = 0; !o.ended() && round < 100'000; ++round) {
        o = e.pump(*c);
        if (o.ended()) break;
        if (!e.ops.sends.empty() && e.ops.sends.front().kind == Send::blocked) {
            e.ops.sends.pop_front();
            continue;
        }
        if (e.ops.write_limit != SIZE_MAX) {
            e.ops.write_limit = SIZE_MAX;
            continue;
        }
        const int64_t at = c->deadline();
        if (at == Connection::kNoDeadline) violated("a request waits with no deadline", e.trace());
        if (at > e.ops.clock) e.ops.clock = at;
        o = c->on_timer(c->timer_gen());
    }
    const std::string trace = e.trace();
    if (failures != 0) violated("the harness reported a failure (a pump that never settles)", trace);
    if (!o.ended()) violated("no terminal outcome", trace);

    for (size_t i = 1; i < e.path.size(); ++i)
        if (!allowed_transitions().count({e.path[i - 1], e.path[i]})) violated("a transition not in the list", trace);

    const ClientJob* j = c->job();
    if (j == nullptr) violated("the request is gone", trace);
    const std::string sent = e.ops.written.substr(written_before);
    if (sent.size() > req.size() || req.compare(0, sent.size(), sent) != 0)
        violated("what was sent is not a prefix of the request", trace);
    if (j->t_send_ns != ClientJob::kNoTime && sent.size() != req.size())
        violated("t_send with the request not all sent", trace);
    check_stamps(*j, o, trace);
    const Http1ResponseParser& p = j->http->parser();
    const std::string cls = c->error_class();

    switch (o.kind) {
        case K::completed_keep:
            if (c->state() != ConnState::idle) violated("kept, but not idle", trace);
            if (sent.size() != req.size()) violated("kept with the request not all written", trace);
            if (!p.message_done() || !p.keep_alive()) violated("kept without a whole keep-alive response", trace);
            break;
        case K::completed_close:
            if (c->state() != ConnState::closed) violated("completed_close, but not closed", trace);
            if (!p.message_done() && !p.failed()) violated("completed with the response neither done nor failed", trace);
            break;
        case K::retry_stale:
            if (c->state() != ConnState::closed) violated("a resend, but not closed", trace);
            if (!reused || j->bytes_read != 0 || p.status() != 0) violated("a resend that had a response", trace);
            if (j->retries != 1 || j->t_send_ns != ClientJob::kNoTime) violated("a resend's job not reset", trace);
            break;
        case K::failed:
        case K::connect_failed:
            if (c->state() != ConnState::failed) violated("failed, but not in the failed state", trace);
            if (cls != "connect" && cls != "timeout" && cls != "no_response" && cls != "client")
                violated("an unknown error class", trace);
            if (o.kind == K::connect_failed && (cls != "connect" || !sent.empty()))
                violated("a failed connect that sent something", trace);
            if (cls == "no_response" && j->bytes_read != 0) violated("no_response after response bytes", trace);
            if (cls == "client" && j->bytes_read <= e.opt.max_response_bytes) violated("the cap hit below it", trace);
            if (reused && cls == "no_response") violated("no_response on a kept-alive connection (resend it)", trace);
            break;
        case K::closed:
            violated("an idle close with a request on the connection", trace);
        case K::pending:
            break;
    }
    if (o.kind != K::failed || cls != "client") {
        if (j->bytes_read > e.opt.max_response_bytes) violated("past the size cap without class client", trace);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    run(Input{data, size});
    return 0;
}
