// ClientEngine's private parts, shared by engine.cpp (the API side) and
// engine_loop.cpp (the engine thread). Not for other users.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "client/engine.hpp"
#include "io/event_loop.hpp"

namespace pytps {

constexpr uint64_t kClientSchedTag = uint64_t(1) << 62;  // the deadline of the earliest scheduled send
constexpr size_t kClientRecvBytes = 64 * 1024;

struct ClientEngine::Job {
    uint64_t id = 0;
    std::string request;
    int64_t t_sched_ns = ClientResult::kNoTime;
    int64_t t_send_ns = ClientResult::kNoTime;
    int64_t connect_ns = -1;
    int64_t tls_ns = -1;
    size_t bytes_read = 0;  // of the response (plaintext over TLS)
    bool retried = false;
    std::unique_ptr<HttpStreamRecorder> http;
    std::vector<int64_t> recv_ns;         // with kernel_timestamps (see ClientResult)
    std::vector<int64_t> recv_kernel_ns;
};

struct ClientEngine::Conn {
    enum class State { connecting, handshaking, busy, idle };
    uint64_t id = 0;
    int fd = -1;
    State state = State::connecting;
    bool reused = false;  // carried a response before this request
    bool want_out = false;
    uint64_t gen = 0;  // timer generation: deadlines of an earlier request are stale
    size_t write_off = 0;  // of job->request: sent (plain), or taken by the TLS session
    int64_t t_start_ns = 0;  // connect or write start
    int64_t t_tls_start_ns = 0;  // the handshake's start (TCP connected)
    int64_t last_data_ns = 0;
    std::unique_ptr<Job> job;
    // TLS: the session, and its ciphertext waiting to be sent (from tls_out_off on).
    std::unique_ptr<TlsSession> tls;
    std::string tls_out;
    size_t tls_out_off = 0;
};

struct ClientEngine::Loop {
    explicit Loop(int64_t spin_ns) : el(spin_ns), buf(kClientRecvBytes) {}
    EventLoop el;
    std::map<uint64_t, std::unique_ptr<Conn>> conns;
    std::vector<uint64_t> idle;  // most recently used last
    std::deque<std::unique_ptr<Job>> ready;
    std::multimap<int64_t, std::unique_ptr<Job>> scheduled;
    std::vector<char> buf;
    uint64_t next_conn = 1;
    RealtimeOffset realtime;  // for kernel stamps; re-measured each second
};

}  // namespace pytps
