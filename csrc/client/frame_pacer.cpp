#include "client/frame_pacer.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <utility>

#include "core/clock.hpp"
#include "io/event_loop.hpp"
#include "io/platform.hpp"

namespace pytps {

FramePacer::FramePacer(int64_t spin_ns, bool realtime)
    : loop_(std::make_unique<EventLoop>(spin_ns)), owner_pid_(getpid()) {
    thread_ = std::make_unique<std::thread>([this] { run(); });
    if (realtime) {
        // Below the emulator's timing thread (10), so a client and emulator on one machine
        // leave the server's timing first.
        sched_param sp{};
        sp.sched_priority = 5;
        realtime_ = pthread_setschedparam(thread_->native_handle(), SCHED_FIFO, &sp) == 0;
    }
}

FramePacer::~FramePacer() {
    if (getpid() != owner_pid_) {  // a forked child: no thread to stop, and joining it would hang
        (void)thread_.release();  // NOLINT: deliberately leaked, never destroyed (a joinable
        return;                   // std::thread's destructor would terminate the process)
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    loop_->wake();
    thread_->join();
}

uint64_t FramePacer::open(int fd) {
    std::lock_guard<std::mutex> lk(mu_);
    const uint64_t id = next_id_++;
    channels_.emplace(id, Channel{fd, {}, {}, 0, 0, 0});
    return id;
}

bool FramePacer::send(uint64_t channel, int64_t due_ns, std::string data, bool stamped) {
    bool wake = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto it = channels_.find(channel);
        if (it == channels_.end() || it->second.error != 0) return false;
        if (data.empty()) return true;  // nothing to write (and a 0-byte send() would prove nothing)
        Channel& ch = it->second;
        Item item{due_ns, next_seq_++, std::move(data), stamped, 0};
        // Sorted by (due, seq): frames come in due order, so this is almost always an append;
        // an item due earlier (a pong, "now") goes before the queued frames but never before a
        // head already partly written.
        auto pos = ch.items.end();
        while (pos != ch.items.begin()) {
            auto prev = std::prev(pos);
            if (prev->due_ns <= due_ns || prev->offset > 0) break;
            pos = prev;
        }
        const bool new_head = pos == ch.items.begin();
        ch.items.insert(pos, std::move(item));
        if (new_head) {  // the thread has no deadline for it yet
            to_schedule_.emplace_back(std::max(due_ns, ch.retry_ns), channel);
            wake = true;
        }
    }
    if (wake) loop_->wake();
    return true;
}

bool FramePacer::send_stamped(uint64_t channel, std::vector<Frame> frames) {
    bool wake = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto it = channels_.find(channel);
        if (it == channels_.end() || it->second.error != 0) return false;
        Channel& ch = it->second;
        const bool was_empty = ch.items.empty();
        for (Frame& f : frames) {
            if (f.data.empty()) continue;
            ch.items.push_back(Item{f.due_ns, next_seq_++, std::move(f.data), true, 0});
        }
        if (was_empty && !ch.items.empty()) {
            to_schedule_.emplace_back(std::max(ch.items.front().due_ns, ch.retry_ns), channel);
            wake = true;
        }
    }
    if (wake) loop_->wake();
    return true;
}

FramePacer::Closed FramePacer::close(uint64_t channel) {
    // The thread writes with mu_ held: once we hold it, no write on this channel is under way.
    std::lock_guard<std::mutex> lk(mu_);
    Closed out;
    auto it = channels_.find(channel);
    if (it == channels_.end()) return out;
    out.sent_ns = std::move(it->second.sent_ns);
    out.unsent = it->second.items.size() + it->second.dropped;
    out.error = it->second.error;
    channels_.erase(it);
    return out;
}

void FramePacer::write_due(uint64_t id, Channel& ch) {
    while (!ch.items.empty() && ch.error == 0) {
        Item& item = ch.items.front();
        const int64_t t = now_ns();  // the write's stamp: right before the send
        if (item.due_ns > t || ch.retry_ns > t) break;
        const ssize_t n = send_nosignal(ch.fd, item.data.data() + item.offset, item.data.size() - item.offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {  // the socket's buffer is full: later
                ch.retry_ns = t + kRetryNs;
                break;
            }
            ch.error = errno;  // the connection is gone; the caller learns it at close()
            ch.dropped += ch.items.size();
            ch.items.clear();
            return;
        }
        if (item.offset == 0 && item.stamped) ch.sent_ns.push_back(t);  // its first bytes left now
        item.offset += static_cast<size_t>(n);
        if (item.offset < item.data.size()) {
            ch.retry_ns = t + kRetryNs;
            break;
        }
        ch.items.pop_front();
    }
    if (!ch.items.empty() && ch.error == 0) loop_->schedule(std::max(ch.items.front().due_ns, ch.retry_ns), id, 0);
}

void FramePacer::run() {
    minimise_timer_slack();
    name_thread("pytps-pacer");
    std::vector<IoEvent> ready;
    std::vector<Deadline> due;
    for (;;) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_) return;
            for (const auto& [at, id] : to_schedule_) loop_->schedule(at, id, 0);
            to_schedule_.clear();
        }
        ready.clear();
        due.clear();
        loop_->wait(ready, due);
        for (const IoEvent& e : ready) {
            if (e.tag == EventLoop::kWakeTag) loop_->drain_wake();
        }
        if (due.empty()) continue;
        std::lock_guard<std::mutex> lk(mu_);
        for (const Deadline& d : due) {
            auto it = channels_.find(d.tag);  // a closed channel's deadlines are stale: skipped
            if (it != channels_.end()) write_due(it->first, it->second);
        }
    }
}

}  // namespace pytps
