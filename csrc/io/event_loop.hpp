// One thread's epoll set plus a heap of absolute deadlines, with a precise wait: sleep in
// the kernel until a spin window before the earliest deadline, then busy-wait on the clock.
// Sleeping alone is late by the scheduler's wake-up latency (tens of µs on a VM); the spin
// trades that much CPU per deadline for being on time. The window adapts to the wake-up
// lateness actually seen (it jumps up to cover a late wake-up and decays slowly, on sleeps
// and spins alike), capped at `spin_ns`: spinning longer than wake-ups need only burns CPU, which costs precision
// when the core is shared (a busy thread is preempted for whole time slices) or the thread
// is real-time (the kernel throttles real-time threads that never sleep).
//
// The sleep is epoll_pwait2 (a ns timeout; glibc >= 2.35, kernel >= 5.11). Without it (an
// older glibc at build time, an older kernel or a seccomp filter at run time, or a build with
// -DPYTPS_FORCE_EPOLL_FALLBACK=ON) the loop sleeps in ppoll on the epoll descriptor, which
// keeps the ns timeout; see EventLoop::poll.
#pragma once
#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <queue>
#include <vector>

namespace pytps {

// How this process's event loops sleep: "epoll_pwait2", or "ppoll" (the fallback). Probed
// once, on the first call: a kernel without epoll_pwait2 answers ENOSYS, a seccomp filter that
// does not know it usually EPERM.
const char* epoll_wait_kind();

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

    // epoll_ctl: add and modify return 0, or the errno of the failed call (ENOMEM, ENOSPC
    // when fs.epoll.max_user_watches is reached, ...); the caller decides what a connection
    // the loop cannot watch becomes. remove ignores failure: see event_loop.cpp.
    int add(int fd, uint32_t events, uint64_t tag) noexcept;
    int modify(int fd, uint32_t events, uint64_t tag) noexcept;
    void remove(int fd) noexcept;

    void schedule(int64_t due_ns, uint64_t tag, uint64_t gen) { heap_.push(Deadline{due_ns, tag, gen}); }

    // Waits for I/O or the earliest deadline, then fills `ready` with the I/O events and
    // `due` with every deadline that has passed (earliest first). Returns at once when
    // either is non-empty; may return with both empty after a signal.
    void wait(std::vector<epoll_event>& ready, std::vector<Deadline>& due);

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
    // This loop's sleep: "epoll_pwait2" or "ppoll" (see epoll_wait_kind()).
    const char* wait_kind() const { return have_pwait2_ ? "epoll_pwait2" : "ppoll"; }

private:
    int epfd_ = -1;
    int wakefd_ = -1;
    int64_t spin_ns_;
    // Written by the loop thread only, read from any thread.
    std::atomic<uint64_t> spins_{0}, sleeps_{0}, polls_{0};
    bool have_pwait2_;
    int64_t last_io_poll_ns_ = 0;
    std::atomic<int64_t> window_ns_{0};  // current spin window, <= spin_ns_
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> heap_;

    // timeout < 0: forever. Returns the number of events (> 0), 0 when the timeout passed, or
    // -1 when the kernel returned with neither (a signal).
    int poll(std::vector<epoll_event>& ready, int64_t timeout_ns);
    int ppoll_wait(epoll_event* evs, int max, int64_t timeout_ns);
    static constexpr int kNothing = -2;
    void collect_due(std::vector<Deadline>& due, int64_t now);
};

}  // namespace pytps
