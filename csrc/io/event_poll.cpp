// The poll() backend (the default everywhere but Linux; on Linux with
// -DPYTPS_EVENT_BACKEND=poll, which is how CI tests it). One pollfd array, rebuilt by nothing:
// add/modify/remove edit it in place (a swap with the last entry on remove), and an index
// finds a descriptor's entry. Level-triggered, like the epoll backend's registrations. The
// array's first entry is the self-pipe that wake() writes to.
#include "io/backend.hpp"
#if PYTPS_EVENT_BACKEND_POLL

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/event_loop.hpp"
#include "io/platform.hpp"

// ppoll takes a timespec (ns); poll() whole milliseconds. CMake checks for ppoll
// (PYTPS_HAVE_PPOLL=0/1); without CMake: Linux has it, macOS does not.
#if !defined(PYTPS_HAVE_PPOLL)
#if defined(__linux__)
#define PYTPS_HAVE_PPOLL 1
#else
#define PYTPS_HAVE_PPOLL 0
#endif
#endif

namespace pytps {

namespace {

short to_poll(uint32_t ev) { return static_cast<short>((ev & kIoIn ? POLLIN : 0) | (ev & kIoOut ? POLLOUT : 0)); }

uint32_t from_poll(short ev) {
    return (ev & POLLIN ? kIoIn : 0u) | (ev & POLLOUT ? kIoOut : 0u) | (ev & (POLLERR | POLLNVAL) ? kIoErr : 0u) |
           (ev & POLLHUP ? kIoHup : 0u);
}

}  // namespace

const char* event_backend() { return "poll"; }
const char* event_wait_kind() { return PYTPS_HAVE_PPOLL ? "ppoll" : "poll"; }

struct EventLoop::Backend {
    Waker waker;
    std::vector<pollfd> fds;
    std::vector<uint64_t> tags;               // tags[i] is fds[i]'s
    std::unordered_map<int, size_t> index;    // fd -> its entry
};

EventLoop::EventLoop(int64_t spin_ns) : be_(new Backend), spin_ns_(spin_ns < 0 ? 0 : spin_ns), window_ns_(spin_ns_) {
    if (add(be_->waker.fd(), kIoIn, kWakeTag) != 0)
        throw std::runtime_error("cannot watch the event loop's wake-up pipe: out of memory");
}

EventLoop::~EventLoop() = default;

int EventLoop::add(int fd, uint32_t events, uint64_t tag) noexcept {
    Backend& b = *be_;
    if (fd < 0) return EBADF;
    try {
        if (!b.index.emplace(fd, b.fds.size()).second) return EEXIST;
        b.fds.push_back(pollfd{fd, to_poll(events), 0});
        b.tags.push_back(tag);
    } catch (const std::bad_alloc&) {
        b.index.erase(fd);
        b.fds.resize(b.index.size());
        b.tags.resize(b.index.size());
        return ENOMEM;
    }
    return 0;
}

int EventLoop::modify(int fd, uint32_t events, uint64_t tag) noexcept {
    Backend& b = *be_;
    auto it = b.index.find(fd);
    if (it == b.index.end()) return ENOENT;
    b.fds[it->second].events = to_poll(events);
    b.tags[it->second] = tag;
    return 0;
}

void EventLoop::remove(int fd) noexcept {
    Backend& b = *be_;
    auto it = b.index.find(fd);
    if (it == b.index.end()) return;
    const size_t i = it->second, last = b.fds.size() - 1;
    b.index.erase(it);
    if (i != last) {
        b.fds[i] = b.fds[last];
        b.tags[i] = b.tags[last];
        b.index[b.fds[i].fd] = i;  // an existing key: no allocation
    }
    b.fds.pop_back();
    b.tags.pop_back();
}

void EventLoop::wake() { (void)be_->waker.signal(); }

void EventLoop::drain_wake() { be_->waker.drain(); }

const char* EventLoop::wait_kind() const { return event_wait_kind(); }

// Without ppoll, a timeout is whole milliseconds: the whole ones are slept, and what is left
// below a millisecond is not slept at all but polled (poll(0), again and again until the
// deadline loop's spin window is reached). That keeps every deadline, at the price of up to a
// millisecond of busy polling per sleep; rounding up instead would be late by up to 1 ms.
int EventLoop::kernel_wait(std::vector<IoEvent>& ready, int64_t timeout_ns) {
    Backend& b = *be_;
#if PYTPS_HAVE_PPOLL
    timespec ts{static_cast<time_t>(timeout_ns / 1000000000LL), static_cast<long>(timeout_ns % 1000000000LL)};
    const int n = ::ppoll(b.fds.data(), static_cast<nfds_t>(b.fds.size()), timeout_ns >= 0 ? &ts : nullptr, nullptr);
#else
    const int ms = timeout_ns < 0 ? -1 : static_cast<int>(std::min<int64_t>(timeout_ns / 1'000'000, 1 << 30));
    const int n = ::poll(b.fds.data(), static_cast<nfds_t>(b.fds.size()), ms);
#endif
    if (n <= 0) return n;  // 0: timed out; -1: errno (EINTR)
    int found = 0;
    for (size_t i = 0; i < b.fds.size() && found < n; ++i) {
        if (b.fds[i].revents == 0) continue;
        ++found;
        ready.push_back(IoEvent{from_poll(b.fds[i].revents), b.tags[i]});
    }
    return found > 0 ? found : kNothing;
}

}  // namespace pytps

#endif  // PYTPS_EVENT_BACKEND_POLL
