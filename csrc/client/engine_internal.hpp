// ClientEngine's private parts, shared by engine.cpp (the API side) and engine_loop.cpp (the
// engine thread). Not for other users.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "client/connection.hpp"
#include "client/engine.hpp"
#include "client/job.hpp"
#include "client/socket_ops.hpp"
#include "io/event_loop.hpp"

namespace pytps {

constexpr uint64_t kClientSchedTag = uint64_t(1) << 62;  // the deadline of the earliest scheduled send
constexpr size_t kClientRecvBytes = 64 * 1024;

// The engine thread: epoll, timers, the keep-alive pool and the schedule. What happens on one
// connection is the Connection's (client/connection.hpp); the loop routes readiness, timers and
// requests to it and acts on the Outcome it returns.
struct ClientEngine::Loop {
    explicit Loop(ClientEngine& engine);

    struct Slot {
        std::unique_ptr<Connection> conn;
        bool watch_out = true;  // EPOLLOUT is in the epoll set
        bool pooled = false;    // in `idle`
    };

    ClientEngine& eng;
    EventLoop el;
    SystemSocketOps ops;  // before conns: a Connection closes its socket through it
    std::vector<char> buf;
    RealtimeOffset realtime;  // for kernel stamps; re-measured each second
    ConnConfig cfg;
    std::map<uint64_t, Slot> conns;
    std::vector<uint64_t> idle;  // most recently used last
    std::deque<std::unique_ptr<ClientJob>> ready;
    std::multimap<int64_t, std::unique_ptr<ClientJob>> scheduled;
    uint64_t next_conn = 1;
    size_t first_addr = 0;  // where a new connection's first attempt goes: past the last that failed

    void run();
    void take_incoming(std::vector<std::unique_ptr<ClientJob>>& taken);
    void on_io(uint64_t tag, uint32_t events);
    void on_deadline(const Deadline& d);
    void dispatch();
    Slot* take_idle();
    bool evict_idle();
    void open(std::unique_ptr<ClientJob> job);
    void connect_failed(std::unique_ptr<ClientJob> job, int64_t t, std::string detail);
    void act(Slot& s, Outcome o);
    void watch(Slot& s);
    void close(Slot& s);
    void stop_all(const char* why);  // every unfinished request ends, class client, with why
};

}  // namespace pytps
