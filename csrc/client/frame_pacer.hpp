// A sender thread that writes already-encoded bytes to sockets at absolute due instants: the
// realtime transport's audio frames leave at the speed of speech whatever Python's event loop is
// doing (a read being handled, a collection, another session's encoding). The thread sleeps in
// io's EventLoop (the kernel's ns-timeout wait until a short adaptive spin window before the due
// instant, then the clock), stamps CLOCK_MONOTONIC right before each send() and never touches
// Python, so it needs no GIL.
//
// Ownership of writes: while a channel is open the pacer is the only writer of its descriptor
// (the caller routes every write of that connection through send(), due 0 for "now"), so two
// threads never interleave bytes on one socket. close() hands the descriptor back: it drops what
// is unsent and returns only once no write on it is in progress. The descriptor is never closed,
// watched or read here; the caller closes it after close().
//
// Order: a channel's items leave in (due, call order) order; a partial write (a full socket
// buffer) keeps the rest of its item at the head, retried every kRetryNs, so an item is never
// split by another. Each item is one whole WebSocket frame (or several), so an item with an
// earlier due (a pong) may go between two frames, never inside one.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pytps {

class EventLoop;

class FramePacer {
public:
    static constexpr int64_t kRetryNs = 1'000'000;  // a full socket buffer is tried again after this

    // spin_ns caps the busy-wait before a due instant (io/event_loop.hpp). Starts the thread.
    // realtime asks for SCHED_FIFO for the thread (root or CAP_SYS_NICE), as audio software does:
    // a normal thread waits behind other runnable threads of its core for up to a time slice
    // (ms); a FIFO thread preempts them. Refused, the thread runs as a normal one (realtime() says
    // which): pacing still works, with the scheduler's lateness.
    explicit FramePacer(int64_t spin_ns, bool realtime = false);
    // Whether the thread runs SCHED_FIFO.
    bool realtime() const { return realtime_; }
    // Stops and joins the thread; open channels are dropped unsent. In a forked child, which has
    // the object but not the thread, the thread's handle is let go without a join.
    ~FramePacer();
    FramePacer(const FramePacer&) = delete;
    FramePacer& operator=(const FramePacer&) = delete;

    // A channel writing to fd (a connected, non-blocking socket the caller keeps owning).
    uint64_t open(int fd);
    // Queues data to be written at due_ns (CLOCK_MONOTONIC; <= now: at once). A stamped item's
    // write instant is kept for close(). false when the channel is unknown, closed, or failed.
    bool send(uint64_t channel, int64_t due_ns, std::string data, bool stamped);
    // A session's frames at once, dues non-decreasing and none earlier than what is queued: one
    // lock for the lot, so the thread never waits on a caller queueing frame by frame.
    struct Frame {
        int64_t due_ns;
        std::string data;
    };
    bool send_stamped(uint64_t channel, std::vector<Frame> frames);

    struct Closed {
        std::vector<int64_t> sent_ns;  // each stamped item's write stamp, in write order
        size_t unsent = 0;             // items dropped unsent (stamped or not)
        int error = 0;                 // errno of a failed write (EPIPE, ECONNRESET...), else 0
    };
    // Ends the channel: drops its unsent items and waits for a write in progress on it.
    Closed close(uint64_t channel);

private:
    struct Item {
        int64_t due_ns;
        uint64_t seq;
        std::string data;
        bool stamped;
        size_t offset = 0;  // bytes already written
    };
    struct Channel {
        int fd;
        std::deque<Item> items;       // sorted by (due_ns, seq)
        std::vector<int64_t> sent_ns;
        int64_t retry_ns = 0;         // after a partial write: not before this
        int error = 0;
        size_t dropped = 0;           // items dropped by a failed write
    };

    void run();
    void write_due(uint64_t id, Channel& ch);  // writes its items now due; mu_ held

    std::unique_ptr<EventLoop> loop_;
    std::mutex mu_;                   // guards everything below; held by the thread while it writes
    std::map<uint64_t, Channel> channels_;
    std::vector<std::pair<int64_t, uint64_t>> to_schedule_;  // (due, channel) for the thread's heap
    uint64_t next_id_ = 1, next_seq_ = 0;
    bool stop_ = false;
    int owner_pid_;
    bool realtime_ = false;
    std::unique_ptr<std::thread> thread_;
};

}  // namespace pytps
