// What tests/cpp/test_connection*.cpp drive a pytps::Connection with: scripted socket calls
// and clock (FakeOps), a level-triggered "epoll" over them (pump), and a record of every state
// transition, so that the tests can say which transitions were walked.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "client/connection.hpp"
#include "core/clock.hpp"

namespace harness {

using namespace pytps;

extern int failures;
extern int checks;
extern const char* current_test;

inline void report(bool ok, const char* file, int line, const char* what, const std::string& detail) {
    ++checks;
    if (ok) return;
    ++failures;
    std::printf("FAIL [%s] %s:%d: %s%s\n", current_test, file, line, what, detail.c_str());
}

// By the built-in types, not int64_t/uint64_t: those are long on Linux but long long on macOS,
// where size_t (unsigned long) would then match two overloads.
inline std::string show(int v) { return std::to_string(v); }
inline std::string show(long v) { return std::to_string(v); }
inline std::string show(long long v) { return std::to_string(v); }
inline std::string show(unsigned long v) { return std::to_string(v); }
inline std::string show(unsigned long long v) { return std::to_string(v); }
inline std::string show(bool v) { return v ? "true" : "false"; }
inline std::string show(const std::string& v) { return "\"" + v + "\""; }
inline std::string show(const char* v) { return show(std::string(v)); }
inline std::string show(ConnState s) { return state_name(s); }
inline std::string show(Outcome::Kind k) {
    static const char* names[] = {"pending", "completed_keep", "completed_close", "failed",
                                  "retry_stale", "closed",  "connect_failed"};
    return names[static_cast<int>(k)];
}
template <class T>
std::string show(const std::vector<T>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + show(v[i]);
    return s + "]";
}

#define CHECK(cond) ::harness::report((cond), __FILE__, __LINE__, #cond, "")
#define CHECK_EQ(a, b)                                                                                      \
    do {                                                                                                    \
        const auto va_ = (a);                                                                              \
        const auto vb_ = (b);                                                                              \
        const bool ok_ = va_ == vb_;                                                                        \
        ::harness::report(ok_, __FILE__, __LINE__, #a " == " #b,                                            \
                          ok_ ? std::string() : ": " + ::harness::show(va_) + " != " + ::harness::show(vb_)); \
    } while (0)
#define CHECK_HAS(text, part)                                                                              \
    do {                                                                                                   \
        const std::string t_ = (text);                                                                     \
        ::harness::report(t_.find(part) != std::string::npos, __FILE__, __LINE__, #text " has " #part,     \
                          ": " + ::harness::show(t_));                                                     \
    } while (0)

// Every transition seen by any test, for the coverage check at the end.
std::set<std::pair<ConnState, ConnState>>& transitions_seen();

// One recv()'s scripted result.
struct Recv {
    enum Kind { data, again, eof, error, peer } kind = data;
    std::string bytes;  // data: given over as many recvs as the buffer needs
    int err = 0;
    int64_t t = 0;      // the stamp (0: the clock's next tick)
    size_t max = SIZE_MAX;  // peer: at most this many of the peer's bytes
};
inline Recv bytes(std::string b, int64_t t = 0) { return Recv{Recv::data, std::move(b), 0, t}; }
inline Recv again_recv() { return Recv{Recv::again, {}, 0, 0}; }
inline Recv eof(int64_t t = 0) { return Recv{Recv::eof, {}, 0, t}; }
inline Recv recv_error(int e, int64_t t = 0) { return Recv{Recv::error, {}, e, t}; }

// One send()'s scripted result.
struct Send {
    enum Kind { take, again, blocked, error } kind = take;
    size_t max = SIZE_MAX;  // take: at most this many bytes
    int err = 0;            // error: errno
};
// blocked: EAGAIN, and not writable until the test removes it (a server that stopped reading).
inline Send take(size_t max = SIZE_MAX) { return Send{Send::take, max, 0}; }
inline Send again_send() { return Send{Send::again, 0, 0}; }
inline Send blocked() { return Send{Send::blocked, 0, 0}; }
inline Send send_error(int e) { return Send{Send::error, 0, e}; }

// A TLS server on the other end (test_connection_tls.cpp): what the client sends goes to it,
// and its output is what recv() returns when no scripted step is left.
struct Peer {
    virtual ~Peer() = default;
    virtual void from_client(const char* data, size_t n) = 0;
    virtual size_t pending() const = 0;
    virtual std::string take(size_t max) = 0;
};

class FakeOps : public SocketOps {
public:
    int64_t clock = 1'000'000'000;
    int64_t tick = 1'000;  // every call advances the clock this much
    OpenResult open_result{3, true, 0, ""};
    int connect_err = 0;
    bool hangup = false;  // the connect's readiness carries EPOLLERR/EPOLLHUP
    std::deque<Recv> recvs;
    std::deque<Send> sends;  // none left: take everything
    size_t send_max = SIZE_MAX;  // with no step left, at most this many bytes per send
    size_t write_limit = SIZE_MAX;  // the socket takes this many bytes in all, then blocks
    size_t peer_chunk = SIZE_MAX;   // at most this many of the peer's bytes per recv
    bool again_first = false;  // every send and every recv returns EAGAIN once before it does anything
    int64_t kernel_lag = -1;   // >= 0: each read carries a kernel stamp this much before its own
    int64_t realtime_offset = 0;
    Peer* peer = nullptr;

    std::string written;
    std::vector<int64_t> send_stamps;  // of each send that took bytes
    struct Read {
        int64_t t;
        size_t n;
        size_t peer_total;  // peer bytes delivered up to and including this read
    };
    std::vector<Read> reads;  // of each recv that returned bytes
    int eagain_sends = 0, eagain_recvs = 0, recv_calls = 0, send_calls = 0;
    std::vector<int> closed;
    size_t peer_delivered = 0;

    int64_t tick_clock() { return clock += tick; }
    int64_t now() override { return tick_clock(); }
    OpenResult open(const sockaddr*, socklen_t, bool) override { return open_result; }
    int connect_error(int) override { return connect_err; }
    void close(int fd) override { closed.push_back(fd); }

    bool writable() const {
        if (written.size() >= write_limit) return false;
        return sends.empty() || sends.front().kind != Send::blocked;
    }
    bool readable() const {
        if (!recvs.empty()) return recvs.front().kind != Recv::peer || (peer && peer->pending());
        return peer != nullptr && peer->pending() > 0;
    }

    IoResult send(int, const char* data, size_t len) override {
        ++send_calls;
        IoResult r;
        r.t_ns = tick_clock();
        if (again_first && owe_send_again_) {
            owe_send_again_ = false;
            ++eagain_sends;
            return would_block(r);
        }
        owe_send_again_ = true;
        if (written.size() >= write_limit) return would_block(r);
        Send s = take(send_max);
        if (!sends.empty()) {
            s = sends.front();
            if (s.kind != Send::blocked) sends.pop_front();
        }
        if (s.kind == Send::again || s.kind == Send::blocked) return would_block(r);
        if (s.kind == Send::error) {
            r.n = -1;
            r.err = s.err;
            return r;
        }
        size_t n = std::min(len, s.max);
        n = std::min(n, write_limit - written.size());
        written.append(data, n);
        send_stamps.push_back(r.t_ns);
        r.n = static_cast<ssize_t>(n);
        if (peer) peer->from_client(data, n);
        return r;
    }

    IoResult recv(int, char* buf, size_t len, bool kernel_stamps) override {
        ++recv_calls;
        IoResult r;
        if (again_first && owe_recv_again_) {
            owe_recv_again_ = false;
            ++eagain_recvs;
            r.t_ns = tick_clock();
            return would_block(r);
        }
        owe_recv_again_ = true;
        if (recvs.empty()) {
            r.t_ns = tick_clock();
            if (peer == nullptr || peer->pending() == 0) return would_block(r);
            return deliver(r, buf, peer->take(std::min(len, peer_chunk)), true, kernel_stamps);
        }
        Recv& s = recvs.front();
        r.t_ns = s.t != 0 ? (clock = s.t) : tick_clock();
        switch (s.kind) {
            case Recv::data: {
                const size_t n = std::min(len, s.bytes.size());
                std::string part = s.bytes.substr(0, n);
                if (n < s.bytes.size()) {
                    s.bytes.erase(0, n);
                    s.t = 0;
                } else {
                    recvs.pop_front();
                }
                return deliver(r, buf, part, false, kernel_stamps);
            }
            case Recv::peer: {
                if (peer == nullptr || peer->pending() == 0) return would_block(r);
                const size_t max = std::min(len, std::min(s.max, peer_chunk));
                recvs.pop_front();
                return deliver(r, buf, peer->take(max), true, kernel_stamps);
            }
            case Recv::again:
                recvs.pop_front();
                return would_block(r);
            case Recv::eof:
                recvs.pop_front();
                r.n = 0;
                return r;
            case Recv::error:
                r.n = -1;
                r.err = s.err;
                recvs.pop_front();
                return r;
        }
        return r;
    }

private:
    bool owe_send_again_ = true;
    bool owe_recv_again_ = true;

    static IoResult would_block(IoResult r) {
        r.n = -1;
        r.err = EAGAIN;
        return r;
    }
    IoResult deliver(IoResult r, char* buf, const std::string& part, bool from_peer, bool kernel_stamps) {
        std::memcpy(buf, part.data(), part.size());
        r.n = static_cast<ssize_t>(part.size());
        if (from_peer) peer_delivered += part.size();
        reads.push_back(Read{r.t_ns, part.size(), peer_delivered});
        if (kernel_stamps && kernel_lag >= 0) r.kernel_real_ns = r.t_ns - kernel_lag + realtime_offset;
        return r;
    }
};

// A Connection's world: options, the shared read buffer, the scripted ops, the transition trace.
struct Env {
    ClientOptions opt;
    FakeOps ops;
    std::vector<char> buf;
    RealtimeOffset realtime;
    std::atomic<uint64_t> reads{0};
    ConnConfig cfg;
    std::unique_ptr<TlsContext> tls;
    std::vector<std::string> path;  // states in order, from the first
    sockaddr_storage addr{};

    explicit Env(size_t buf_len = 64 * 1024) : buf(buf_len) {
        opt.first_byte_timeout_ns = opt.idle_timeout_ns;  // as ClientEngine's constructor sets it
        realtime.offset_ns = 7'000;
        realtime.measured_at_ns = INT64_MAX / 2;  // never re-measured against the scripted clock
        ops.realtime_offset = realtime.offset_ns;
        cfg.options = &opt;
        cfg.realtime = &realtime;
        cfg.reads = &reads;
        cfg.buf = buf.data();
        cfg.buf_len = buf.size();
        cfg.on_state = &Env::on_state;
        cfg.on_state_ctx = this;
        path.push_back(state_name(ConnState::connecting));
    }
    Env(const Env&) = delete;

    static void on_state(void* ctx, uint64_t, ConnState from, ConnState to) {
        static_cast<Env*>(ctx)->path.push_back(state_name(to));
        transitions_seen().insert({from, to});
    }
    std::string trace() const {
        std::string s;
        for (size_t i = 0; i < path.size(); ++i) s += (i ? ">" : "") + path[i];
        return s;
    }

    std::unique_ptr<Connection> make(uint64_t id = 1) { return std::make_unique<Connection>(id, ops, cfg); }

    // open() and opened(), as the engine calls them.
    Outcome open(Connection& c, std::unique_ptr<ClientJob> job) {
        Outcome o = c.open(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, std::move(job));
        if (o.ended()) return o;
        return c.opened();
    }

    // A level-triggered epoll over the script: calls on_ready while the connection has
    // something to do; returns the Outcome that ended it, or pending once nothing would wake it.
    Outcome pump(Connection& c, int limit = 1'000'000) {
        for (int i = 0; i < limit; ++i) {
            unsigned ready = 0;
            if (c.state() == ConnState::connecting) {
                ready = kWritable | (ops.hangup ? kHangup : 0u);
            } else {
                if (c.wants_write() && ops.writable()) ready |= kWritable;
                if (ops.readable()) ready |= kReadable;
            }
            if (ready == 0) return Outcome{};
            Outcome o = c.on_ready(ready);
            if (o.ended()) return o;
        }
        report(false, __FILE__, __LINE__, "pump settles", "");
        return Outcome{};
    }
};

inline std::unique_ptr<ClientJob> job(std::string request, uint64_t id = 1) {
    auto j = std::make_unique<ClientJob>();
    j->id = id;
    j->request = std::move(request);
    j->http = std::make_unique<HttpStreamRecorder>(Dialect::OpenAIChat);
    return j;
}

// A response as the tests send it, with where its parts end (offsets into bytes, exclusive).
struct Response {
    std::string bytes;
    size_t head_end = 0;
    std::vector<size_t> event_ends;  // of each output-bearing event
};

inline std::string chunk(const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
}

const char* const kEvent = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";

// An SSE stream of n events, chunked (each event one chunk) or with a Content-Length.
inline Response sse_response(int n, bool chunked = true) {
    std::string body;
    std::vector<size_t> ends;
    for (int i = 0; i < n; ++i) {
        const std::string part = chunked ? chunk(kEvent) : std::string(kEvent);
        ends.push_back(body.size() + part.size() - (chunked ? 2 : 0));
        body += part;
    }
    const std::string done = "data: [DONE]\n\n";
    body += chunked ? chunk(done) + "0\r\n\r\n" : done;
    Response r;
    r.bytes = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
    r.bytes += chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    r.head_end = r.bytes.size();
    for (size_t e : ends) r.event_ends.push_back(r.head_end + e);
    r.bytes += body;
    return r;
}

inline std::string request(size_t body_bytes = 2) {
    return "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body_bytes) +
           "\r\n\r\n" + std::string(body_bytes, 'x');
}

struct Case {
    const char* name;
    void (*fn)();
};
extern const std::vector<Case> lifecycle_cases;  // test_connection.cpp
extern const std::vector<Case> read_cases;       // test_connection_reads.cpp
extern const std::vector<Case> tls_cases;        // test_connection_tls.cpp (empty without OpenSSL)

}  // namespace harness
