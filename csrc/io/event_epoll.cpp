// The epoll backend (Linux's default; see event_loop.hpp).
#include "io/backend.hpp"
#if !PYTPS_EVENT_BACKEND_POLL

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "io/event_loop.hpp"
#include "io/platform.hpp"

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

timespec to_timespec(int64_t ns) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(ns / 1000000000LL);
    ts.tv_nsec = static_cast<long>(ns % 1000000000LL);
    return ts;
}

uint32_t to_epoll(uint32_t ev) {
    return (ev & kIoIn ? uint32_t(EPOLLIN) : 0u) | (ev & kIoOut ? uint32_t(EPOLLOUT) : 0u) |
           (ev & kIoRdHup ? uint32_t(EPOLLRDHUP) : 0u);
}

uint32_t from_epoll(uint32_t ev) {
    return (ev & EPOLLIN ? kIoIn : 0u) | (ev & EPOLLOUT ? kIoOut : 0u) | (ev & EPOLLERR ? kIoErr : 0u) |
           (ev & EPOLLHUP ? kIoHup : 0u) | (ev & EPOLLRDHUP ? kIoRdHup : 0u);
}

int ctl(int epfd, int op, int fd, uint32_t events, uint64_t tag) noexcept {
    epoll_event ev{};
    ev.events = to_epoll(events);
    ev.data.u64 = tag;
    return epoll_ctl(epfd, op, fd, &ev) == 0 ? 0 : errno;
}

constexpr int kMaxEvents = 256;

}  // namespace

const char* event_backend() { return "epoll"; }
const char* event_wait_kind() { return pwait2_in_process() ? "epoll_pwait2" : "ppoll"; }

struct EventLoop::Backend {
    int epfd = -1;
    Waker waker;
    bool have_pwait2 = pwait2_in_process();
    epoll_event evs[kMaxEvents];
};

EventLoop::EventLoop(int64_t spin_ns) : be_(new Backend), spin_ns_(spin_ns < 0 ? 0 : spin_ns), window_ns_(spin_ns_) {
    be_->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (be_->epfd < 0) throw std::runtime_error(std::string("epoll_create1 failed: ") + std::strerror(errno));
    if (const int err = add(be_->waker.fd(), kIoIn, kWakeTag)) {
        ::close(be_->epfd);
        throw std::runtime_error(std::string("epoll_ctl(EPOLL_CTL_ADD) of the wake-up eventfd failed: ") +
                                 std::strerror(err));
    }
}

EventLoop::~EventLoop() {
    if (be_->epfd >= 0) ::close(be_->epfd);
}

int EventLoop::add(int fd, uint32_t events, uint64_t tag) noexcept { return ctl(be_->epfd, EPOLL_CTL_ADD, fd, events, tag); }

int EventLoop::modify(int fd, uint32_t events, uint64_t tag) noexcept {
    return ctl(be_->epfd, EPOLL_CTL_MOD, fd, events, tag);
}

void EventLoop::remove(int fd) noexcept { (void)epoll_ctl(be_->epfd, EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::wake() { (void)be_->waker.signal(); }

void EventLoop::drain_wake() { be_->waker.drain(); }

const char* EventLoop::wait_kind() const { return be_->have_pwait2 ? "epoll_pwait2" : "ppoll"; }

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
int EventLoop::kernel_wait(std::vector<IoEvent>& ready, int64_t timeout_ns) {
    Backend& b = *be_;
    int n = -1;
    bool waited = false;
#if PYTPS_USE_EPOLL_PWAIT2
    if (b.have_pwait2) {
        timespec ts{};
        if (timeout_ns >= 0) ts = to_timespec(timeout_ns);
        n = epoll_pwait2(b.epfd, b.evs, kMaxEvents, timeout_ns >= 0 ? &ts : nullptr, nullptr);
        if (n < 0 && pwait2_missing(errno)) {
            b.have_pwait2 = false;  // present at the probe, refused now: ppoll from here on
        } else {
            waited = true;
        }
    }
#endif
    if (!waited) {
        if (timeout_ns <= 0) {
            n = epoll_wait(b.epfd, b.evs, kMaxEvents, timeout_ns < 0 ? -1 : 0);  // no timer to keep
        } else {
            const timespec ts = to_timespec(timeout_ns);
            pollfd p{b.epfd, POLLIN, 0};
            n = ::ppoll(&p, 1, &ts, nullptr);  // 0: timed out; -1: errno (EINTR)
            if (n > 0) {
                bump_counter(polls_);
                n = epoll_wait(b.epfd, b.evs, kMaxEvents, 0);
                if (n == 0) return kNothing;  // readiness gone by the time of the look: a spurious return
            }
        }
    }
    for (int i = 0; i < n; ++i) ready.push_back(IoEvent{from_epoll(b.evs[i].events), b.evs[i].data.u64});
    return n;
}

}  // namespace pytps

#endif  // !PYTPS_EVENT_BACKEND_POLL
