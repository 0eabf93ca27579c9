#include "io/event_loop.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/clock.hpp"

namespace pytps {

EventLoop::EventLoop(int64_t spin_ns) : spin_ns_(spin_ns < 0 ? 0 : spin_ns), window_ns_(spin_ns_) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1 failed: ") + std::strerror(errno));
    wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakefd_ < 0) {
        ::close(epfd_);
        throw std::runtime_error(std::string("eventfd failed: ") + std::strerror(errno));
    }
    add(wakefd_, EPOLLIN, kWakeTag);
}

EventLoop::~EventLoop() {
    if (wakefd_ >= 0) ::close(wakefd_);
    if (epfd_ >= 0) ::close(epfd_);
}

void EventLoop::add(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void EventLoop::modify(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
}

void EventLoop::remove(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::wake() {
    uint64_t one = 1;
    ssize_t r = ::write(wakefd_, &one, sizeof one);
    (void)r;
}

void EventLoop::drain_wake() {
    uint64_t v;
    ssize_t r = ::read(wakefd_, &v, sizeof v);
    (void)r;
}

int EventLoop::poll(std::vector<epoll_event>& ready, int64_t timeout_ns) {
    epoll_event evs[256];
    int n;
    if (have_pwait2_) {
        timespec ts;
        timespec* tsp = nullptr;
        if (timeout_ns >= 0) {
            ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000LL);
            ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000LL);
            tsp = &ts;
        }
        n = epoll_pwait2(epfd_, evs, 256, tsp, nullptr);
        if (n < 0 && errno == ENOSYS) {
            have_pwait2_ = false;  // kernel < 5.11: millisecond waits, the spin covers the rest
            return poll(ready, timeout_ns);
        }
    } else {
        int ms = timeout_ns < 0 ? -1 : static_cast<int>(timeout_ns / 1000000);
        n = epoll_wait(epfd_, evs, 256, ms);
    }
    if (n < 0) return 0;  // EINTR
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
        if (n == 0 && spin_ns_ > 0) {
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
