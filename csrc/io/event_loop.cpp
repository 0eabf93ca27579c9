// The event loop's deadlines and precise wait, shared by both backends (event_epoll.cpp,
// event_poll.cpp hold what differs: the descriptor set, the wake-up and the kernel wait).
#include "io/event_loop.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/clock.hpp"

namespace pytps {

int EventLoop::poll(std::vector<IoEvent>& ready, int64_t timeout_ns) {
    bump_counter(polls_);
    if (timeout_ns != 0) bump_counter(sleeps_);
    const int n = kernel_wait(ready, timeout_ns);
    if (n == kNothing) return -1;
    if (n < 0) {
        const int err = errno;
        if (err == EINTR) return -1;  // a signal: the caller waits again
        // EBADF, EFAULT, EINVAL: the loop's own descriptor is broken, which only a bug does
        // (a double close elsewhere). Waiting on would spin without end.
        throw std::runtime_error(std::string(wait_kind()) + " on the event loop failed: " + std::strerror(err));
    }
    return n;
}

void EventLoop::collect_due(std::vector<Deadline>& due, int64_t now) {
    while (!heap_.empty() && heap_.top().due_ns <= now) {
        due.push_back(heap_.top());
        heap_.pop();
    }
}

void EventLoop::wait(std::vector<IoEvent>& ready, std::vector<Deadline>& due) {
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
