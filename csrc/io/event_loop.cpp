#include "io/event_loop.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/clock.hpp"

// Whether glibc declares epoll_pwait2: CMake checks the symbol (PYTPS_HAVE_EPOLL_PWAIT2=0/1);
// a build without CMake (a harness compiling this file alone) asks the glibc version instead.
#if !defined(PYTPS_HAVE_EPOLL_PWAIT2)
#if defined(__GLIBC__)  // (nested: __GLIBC_PREREQ is not defined elsewhere)
#if __GLIBC_PREREQ(2, 35)
#define PYTPS_HAVE_EPOLL_PWAIT2 1
#endif
#endif
#endif
#if !defined(PYTPS_HAVE_EPOLL_PWAIT2)
#define PYTPS_HAVE_EPOLL_PWAIT2 0
#endif
// Without it, or forced (-DPYTPS_FORCE_EPOLL_FALLBACK=ON, so CI builds exactly what an older
// glibc gets), epoll_pwait2 is not referenced at all.
#if PYTPS_HAVE_EPOLL_PWAIT2 && !defined(PYTPS_FORCE_EPOLL_FALLBACK)
#define PYTPS_USE_EPOLL_PWAIT2 1
#else
#define PYTPS_USE_EPOLL_PWAIT2 0
#endif

namespace pytps {

namespace {

#if PYTPS_USE_EPOLL_PWAIT2
// ENOSYS: a kernel older than 5.11. EPERM: a seccomp filter written before the call existed
// (container runtimes' default profiles answer EPERM for what they do not list).
bool pwait2_missing(int err) { return err == ENOSYS || err == EPERM; }
#endif

bool pwait2_usable() {
#if PYTPS_USE_EPOLL_PWAIT2
    const int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) return true;  // cannot tell here; a loop refused at run time falls back itself
    epoll_event ev;
    const timespec zero{0, 0};
    const int r = epoll_pwait2(fd, &ev, 1, &zero, nullptr);
    const int err = errno;
    ::close(fd);
    return !(r < 0 && pwait2_missing(err));
#else
    return false;
#endif
}

bool pwait2_in_process() {
    static const bool usable = pwait2_usable();
    return usable;
}

// The counters have one writer, the loop thread: no read-modify-write needed.
inline void bump(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

timespec to_timespec(int64_t ns) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(ns / 1000000000LL);
    ts.tv_nsec = static_cast<long>(ns % 1000000000LL);
    return ts;
}

constexpr int kMaxEvents = 256;

}  // namespace

const char* epoll_wait_kind() { return pwait2_in_process() ? "epoll_pwait2" : "ppoll"; }

EventLoop::EventLoop(int64_t spin_ns)
    : spin_ns_(spin_ns < 0 ? 0 : spin_ns), have_pwait2_(pwait2_in_process()), window_ns_(spin_ns_) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1 failed: ") + std::strerror(errno));
    wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakefd_ < 0) {
        ::close(epfd_);
        throw std::runtime_error(std::string("eventfd failed: ") + std::strerror(errno));
    }
    if (const int err = add(wakefd_, EPOLLIN, kWakeTag)) {
        ::close(wakefd_);
        ::close(epfd_);
        throw std::runtime_error(std::string("epoll_ctl(EPOLL_CTL_ADD) of the wake-up eventfd failed: ") +
                                 std::strerror(err));
    }
}

EventLoop::~EventLoop() {
    if (wakefd_ >= 0) ::close(wakefd_);
    if (epfd_ >= 0) ::close(epfd_);
}

int EventLoop::add(int fd, uint32_t events, uint64_t tag) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
}

int EventLoop::modify(int fd, uint32_t events, uint64_t tag) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0 ? 0 : errno;
}

void EventLoop::remove(int fd) noexcept {
    // Called just before close(fd). Failure is harmless: ENOENT or EBADF mean the descriptor
    // is not in the set, and the close that follows takes it out anyway (the loops' sockets
    // are never dup()ed, so the close drops the last reference).
    (void)epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::wake() {
    // Non-blocking, so no EINTR; it fails only with EAGAIN when the counter is about to
    // overflow, i.e. when a wake-up is already pending: harmless either way.
    const uint64_t one = 1;
    const ssize_t r = ::write(wakefd_, &one, sizeof one);
    (void)r;
}

void EventLoop::drain_wake() {
    // Fails only with EAGAIN when the counter is already zero: nothing to drain.
    uint64_t v;
    const ssize_t r = ::read(wakefd_, &v, sizeof v);
    (void)r;
}

// The fallback sleep, where epoll_pwait2 is missing. epoll_wait's own timeout is whole
// milliseconds: rounding a 240 µs sleep down to 0 made it a busy poll (hundreds of returns
// from the kernel per deadline), rounding up would miss the deadline. Two ways keep the
// nanoseconds:
//  - ppoll on the epoll descriptor (this one): an epoll descriptor is readable while events
//    are ready, and ppoll's timespec goes to the same hrtimer sleep as epoll_pwait2's, under
//    the same timer-slack rules. A sleep that times out (the deadline case) is one syscall,
//    as with epoll_pwait2; only a wake-up by I/O costs a second, epoll_wait(0), to collect
//    the events. No descriptor added, no state to keep in step with the heap.
//  - a timerfd (CLOCK_MONOTONIC, TFD_TIMER_ABSTIME) in the epoll set, armed to the wake time,
//    then epoll_wait(-1): a timerfd_settime before every sleep, a read or re-arm to clear it
//    once it fired, and an arming left over from a sleep cut short by I/O wakes the loop
//    again for nothing.
// Returns as poll() does, with kNothing for "the kernel returned, nothing to report".
int EventLoop::ppoll_wait(epoll_event* evs, int max, int64_t timeout_ns) {
    if (timeout_ns <= 0) return epoll_wait(epfd_, evs, max, timeout_ns < 0 ? -1 : 0);  // no timer to keep
    const timespec ts = to_timespec(timeout_ns);
    pollfd p{epfd_, POLLIN, 0};
    const int r = ::ppoll(&p, 1, &ts, nullptr);
    if (r <= 0) return r;  // 0: timed out; -1: errno (EINTR)
    bump(polls_);
    const int n = epoll_wait(epfd_, evs, max, 0);
    return n == 0 ? kNothing : n;  // readiness gone by the time of the look: a spurious return
}

int EventLoop::poll(std::vector<epoll_event>& ready, int64_t timeout_ns) {
    epoll_event evs[kMaxEvents];
    bump(polls_);
    if (timeout_ns != 0) bump(sleeps_);
    int n = -1;
    bool waited = false;
#if PYTPS_USE_EPOLL_PWAIT2
    if (have_pwait2_) {
        timespec ts{};
        if (timeout_ns >= 0) ts = to_timespec(timeout_ns);
        n = epoll_pwait2(epfd_, evs, kMaxEvents, timeout_ns >= 0 ? &ts : nullptr, nullptr);
        if (n < 0 && pwait2_missing(errno)) {
            have_pwait2_ = false;  // present at the probe, refused now: ppoll from here on
        } else {
            waited = true;
        }
    }
#endif
    if (!waited) n = ppoll_wait(evs, kMaxEvents, timeout_ns);
    if (n == kNothing) return -1;
    if (n < 0) {
        if (errno == EINTR) return -1;  // a signal: the caller waits again
        // EBADF, EFAULT, EINVAL: the loop's own descriptor is broken, which only a bug does
        // (a double close elsewhere). Waiting on would spin without end.
        throw std::runtime_error(std::string(have_pwait2_ ? "epoll_pwait2" : "ppoll/epoll_wait") +
                                 " on the event loop failed: " + std::strerror(errno));
    }
    ready.insert(ready.end(), evs, evs + n);
    return n;
}

void EventLoop::collect_due(std::vector<Deadline>& due, int64_t now) {
    while (!heap_.empty() && heap_.top().due_ns <= now) {
        due.push_back(heap_.top());
        heap_.pop();
    }
}

void EventLoop::wait(std::vector<epoll_event>& ready, std::vector<Deadline>& due) {
    ready.clear();
    due.clear();
    int64_t now = now_ns();
    collect_due(due, now);
    if (!due.empty()) {
        // Busy: deadlines keep coming due. Looking for I/O costs a syscall, so do it at most
        // every 50 µs here (new requests wait that long at worst; sockets never lose data).
        if (now - last_io_poll_ns_ >= 50'000) {
            poll(ready, 0);
            last_io_poll_ns_ = now;
        }
        return;
    }
    if (heap_.empty()) {
        poll(ready, -1);
        last_io_poll_ns_ = now_ns();
        collect_due(due, last_io_poll_ns_);
        return;
    }
    const int64_t remaining = heap_.top().due_ns - now;
    int64_t window = window_ns_.load(std::memory_order_relaxed);
    if (remaining > window) {
        const int64_t wake_at = heap_.top().due_ns - window;
        const int n = poll(ready, wake_at - now);
        last_io_poll_ns_ = now_ns();
        if (n == 0 && spin_ns_ > 0) {  // (not on -1: a signal cut the sleep short)
            // A timed-out sleep: how late did it wake? Cover that (plus a margin) at once,
            // forget it slowly (1/64 per sleep), so the window tracks a high quantile.
            const int64_t need = std::min(spin_ns_, std::max<int64_t>(0, last_io_poll_ns_ - wake_at) + kSpinMargin);
            window = need > window ? need : window - (window - need) / 64;
            window_ns_.store(window, std::memory_order_relaxed);
        }
        collect_due(due, last_io_poll_ns_);
        return;
    }
    // Within the spin window: take any I/O that is already there (checked at most every
    // 50 µs, as above), else spin to the deadline.
    if (now - last_io_poll_ns_ >= 50'000) {
        last_io_poll_ns_ = now;
        if (poll(ready, 0) > 0) {
            collect_due(due, now_ns());
            return;
        }
    }
    const int64_t target = heap_.top().due_ns;
    spins_.fetch_add(1, std::memory_order_relaxed);
    // Shrink the window a little on every spin too: otherwise a window that once grew past
    // the gap between deadlines would never sleep, never measure, never shrink, and the
    // thread would spin forever (fatal for a real-time thread, which the kernel throttles).
    window_ns_.store(window - (window - std::min(window, kSpinMargin)) / 64, std::memory_order_relaxed);
    do {
        now = now_ns();
    } while (now < target);
    collect_due(due, now);
}

}  // namespace pytps
