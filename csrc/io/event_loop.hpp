// One thread's set of watched descriptors plus a heap of absolute deadlines, with a precise
// wait: sleep in the kernel until a spin window before the earliest deadline, then busy-wait
// on the clock. Sleeping alone is late by the scheduler's wake-up latency (tens of µs on a
// VM); the spin trades that much CPU per deadline for being on time. The window adapts to the
// wake-up lateness actually seen (it jumps up to cover a late wake-up and decays slowly, on
// sleeps and spins alike), capped at `spin_ns`: spinning longer than wake-ups need only burns
// CPU, which costs precision when the core is shared (a busy thread is preempted for whole
// time slices) or the thread is real-time (the kernel throttles real-time threads that never
// sleep).
//
// Two backends sit behind this interface (io/backend.hpp says which one a build has):
//  - epoll (event_epoll.cpp, Linux's default): sleeps in epoll_pwait2 (a ns timeout; glibc
//    >= 2.35, kernel >= 5.11). Without it (an older glibc at build time, an older kernel or a
//    seccomp filter at run time, or -DPYTPS_FORCE_EPOLL_FALLBACK=ON) it sleeps in ppoll on the
//    epoll descriptor, which keeps the ns timeout.
//  - poll (event_poll.cpp, every other POSIX system's default): poll() over an array of
//    descriptors and a self-pipe for wake-ups; it sleeps in ppoll (ns) where the system has it,
//    else in poll() (whole ms; a sub-ms remainder is polled without sleeping, see there).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "io/backend.hpp"

namespace pytps {

// The events a descriptor is watched for and reported with (each backend maps its own).
enum IoEvents : uint32_t {
    kIoIn = 1u,     // readable (or at EOF)
    kIoOut = 2u,    // writable
    kIoErr = 4u,    // reported only: an error is pending
    kIoHup = 8u,    // reported only: both directions shut down
    kIoRdHup = 16u  // the peer shut down writing (epoll only; poll() reports it as kIoIn)
};

struct IoEvent {
    uint32_t events;
    uint64_t tag;  // the owner's id, given to add()
};

// This build's backend: "epoll" or "poll".
const char* event_backend();
// How this process's event loops sleep: "epoll_pwait2" or "ppoll" (epoll's fallback) on epoll;
// "ppoll" or "poll" on poll. Probed once, on the first call: a kernel without epoll_pwait2
// answers ENOSYS, a seccomp filter that does not know it usually EPERM.
const char* event_wait_kind();

struct Deadline {
    int64_t due_ns;
    uint64_t tag;  // the owner's id
    uint64_t gen;  // the owner's timer generation; stale entries are skipped by the owner
    bool operator>(const Deadline& o) const { return due_ns > o.due_ns; }
};

class EventLoop {
public:
    explicit EventLoop(int64_t spin_ns);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Watch fd for `events` (IoEvents) under `tag`: add and modify return 0, or the errno of
    // the failed call (ENOMEM, ENOSPC when fs.epoll.max_user_watches is reached, EEXIST,
    // ENOENT...); the caller decides what a connection the loop cannot watch becomes. remove
    // ignores failure: the close(fd) that follows takes the descriptor out anyway (the loops'
    // sockets are never dup()ed, so the close drops the last reference).
    int add(int fd, uint32_t events, uint64_t tag) noexcept;
    int modify(int fd, uint32_t events, uint64_t tag) noexcept;
    void remove(int fd) noexcept;

    void schedule(int64_t due_ns, uint64_t tag, uint64_t gen) { heap_.push(Deadline{due_ns, tag, gen}); }

    // Waits for I/O or the earliest deadline, then fills `ready` with the I/O events and
    // `due` with every deadline that has passed (earliest first). Returns at once when
    // either is non-empty; may return with both empty after a signal.
    void wait(std::vector<IoEvent>& ready, std::vector<Deadline>& due);

    // Makes a wait() in progress on the loop thread return (callable from any thread).
    void wake();
    // The tag under which the wake-up descriptor reports; the owner drains it with drain_wake().
    static constexpr uint64_t kWakeTag = ~uint64_t(0);
    static constexpr int64_t kSpinMargin = 5'000;  // added to the wake-up lateness seen
    void drain_wake();

    int64_t spin_ns() const { return spin_ns_; }
    int64_t spin_window_ns() const { return window_ns_.load(std::memory_order_relaxed); }
    uint64_t spins() const { return spins_.load(std::memory_order_relaxed); }
    // Kernel waits with a timeout (each ends in one return from the kernel: I/O, the timeout
    // or a signal): about one per deadline when the loop sleeps as it should, hundreds if it
    // busy-polled. And every wait syscall, the zero-timeout looks for I/O included.
    uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }
    uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
    // This loop's sleep (see event_wait_kind()).
    const char* wait_kind() const;

private:
    struct Backend;  // event_epoll.cpp or event_poll.cpp
    std::unique_ptr<Backend> be_;
    int64_t spin_ns_;
    // Written by the loop thread only, read from any thread.
    std::atomic<uint64_t> spins_{0}, sleeps_{0}, polls_{0};
    int64_t last_io_poll_ns_ = 0;
    std::atomic<int64_t> window_ns_{0};  // current spin window, <= spin_ns_
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> heap_;

    // timeout < 0: forever. Returns the number of events (> 0), 0 when the timeout passed, or
    // -1 when the kernel returned with neither (a signal).
    int poll(std::vector<IoEvent>& ready, int64_t timeout_ns);
    // The backend's wait: appends to ready and returns as poll() does, or kNothing ("the
    // kernel returned, nothing to report"), or < 0 with errno set. Counts extra syscalls in polls_.
    int kernel_wait(std::vector<IoEvent>& ready, int64_t timeout_ns);
    static constexpr int kNothing = -2;
    void collect_due(std::vector<Deadline>& due, int64_t now);
};

// The counters have one writer, the loop thread: no read-modify-write needed.
inline void bump_counter(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace pytps
