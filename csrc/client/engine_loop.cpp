// The ClientEngine's thread: the epoll loop, timers, the keep-alive pool and the scheduled
// sends. Each connection's own steps are the Connection's (connection.cpp).
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "client/engine_internal.hpp"
#include "io/platform.hpp"

namespace pytps {

ClientEngine::Loop::Loop(ClientEngine& engine) : eng(engine), el(engine.opt_.spin_ns), buf(kClientRecvBytes) {
    cfg.options = &eng.opt_;
    cfg.tls = eng.tls_.get();
    cfg.realtime = &realtime;
    cfg.reads = &eng.reads_;
    cfg.buf = buf.data();
    cfg.buf_len = buf.size();
}

void ClientEngine::run() { loop_->run(); }

void ClientEngine::Loop::run() {
    std::vector<IoEvent> events;
    std::vector<Deadline> due;
    std::vector<std::unique_ptr<ClientJob>> taken;
    // Only a label, so per-thread CPU can be told apart; without it nothing else changes.
    name_thread("pytps-engine");
    // An exception would end the thread and the process with it, losing what was measured: the
    // loop's own failure (a broken descriptor set) ends every request instead, each reported.
    std::string failure;
    try {
        while (!eng.stopping_.load()) {
            el.wait(events, due);
            eng.wakeups_.store(eng.wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            for (const IoEvent& ev : events) {
                if (ev.tag == EventLoop::kWakeTag) {
                    el.drain_wake();
                    take_incoming(taken);
                    continue;
                }
                on_io(ev.tag, ev.events);
            }
            for (const Deadline& d : due) on_deadline(d);
            dispatch();
        }
    } catch (const std::exception& e) {
        failure = std::string("the client engine's event loop failed (") + e.what() + ")";
    }
    stop_all(failure.empty() ? "the client engine stopped before the response ended" : failure.c_str());
    eng.thread_cpu_ns_.store(pytps::thread_cpu_ns(), std::memory_order_release);
}

void ClientEngine::Loop::take_incoming(std::vector<std::unique_ptr<ClientJob>>& taken) {
    {
        std::lock_guard<std::mutex> lock(eng.mu_);
        taken.swap(eng.incoming_);
    }
    const int64_t now = now_ns();
    for (auto& job : taken) {
        if (job->t_sched_ns != ClientJob::kNoTime && job->t_sched_ns > now) {
            el.schedule(job->t_sched_ns, kClientSchedTag, 0);
            scheduled.emplace(job->t_sched_ns, std::move(job));
        } else {
            ready.push_back(std::move(job));
        }
    }
    taken.clear();
}

void ClientEngine::Loop::on_io(uint64_t tag, uint32_t events) {
    auto it = conns.find(tag);
    if (it == conns.end()) return;
    unsigned r = 0;
    if (events & (kIoIn | kIoRdHup | kIoHup | kIoErr)) r |= kReadable;
    if (events & kIoOut) r |= kWritable;
    if (events & (kIoErr | kIoHup)) r |= kHangup;
    act(it->second, it->second.conn->on_ready(r));
}

void ClientEngine::Loop::on_deadline(const Deadline& d) {
    if (d.tag == kClientSchedTag) {
        const int64_t now = now_ns();
        while (!scheduled.empty() && scheduled.begin()->first <= now) {
            ready.push_back(std::move(scheduled.begin()->second));
            scheduled.erase(scheduled.begin());
        }
        return;
    }
    auto it = conns.find(d.tag);
    if (it != conns.end()) act(it->second, it->second.conn->on_timer(d.gen));
}

void ClientEngine::Loop::dispatch() {
    while (!ready.empty()) {
        // A resend never goes on a pooled connection: it could be as stale as the one it left.
        const bool fresh_only = ready.front()->retries > 0;
        Slot* s = fresh_only ? nullptr : take_idle();
        if (s != nullptr) {
            std::unique_ptr<ClientJob> job = std::move(ready.front());
            ready.pop_front();
            act(*s, s->conn->start(std::move(job)));
        } else if (static_cast<int>(conns.size()) < eng.opt_.max_connections || (fresh_only && evict_idle())) {
            std::unique_ptr<ClientJob> job = std::move(ready.front());
            ready.pop_front();
            open(std::move(job));
        } else {
            return;  // every connection is busy; a finishing one picks this up
        }
    }
}

// The most recently used idle connection, out of the pool; nullptr when there is none.
ClientEngine::Loop::Slot* ClientEngine::Loop::take_idle() {
    while (!idle.empty()) {
        auto it = conns.find(idle.back());
        idle.pop_back();
        if (it == conns.end()) continue;
        it->second.pooled = false;
        if (it->second.conn->state() == ConnState::idle) return &it->second;
    }
    return nullptr;
}

// Closes the least recently used idle connection to make room for a new one; false if none is idle.
bool ClientEngine::Loop::evict_idle() {
    while (!idle.empty()) {
        auto it = conns.find(idle.front());
        idle.erase(idle.begin());
        if (it == conns.end()) continue;
        it->second.pooled = false;
        close(it->second);
        return true;
    }
    return false;
}

void ClientEngine::Loop::open(std::unique_ptr<ClientJob> job) {
    if (!eng.resolve_error_.empty()) {
        eng.finish(std::move(job), now_ns(), "connect", eng.resolve_error_);
        return;
    }
    const size_t n = eng.addrs_.size();
    job->connect_addr = job->connect_attempts == 0 ? first_addr % n : (job->connect_addr + 1) % n;
    const Address& a = eng.addrs_[job->connect_addr];
    auto conn = std::make_unique<Connection>(next_conn++, ops, cfg);
    Outcome o = conn->open(a.addr(), a.len, std::move(job));
    if (o.ended()) {  // no socket was left open
        std::string detail = conn->take_error_detail();
        if (o.kind == Outcome::Kind::connect_failed) {
            connect_failed(conn->take_job(), o.t_ns, std::move(detail));
        } else {
            eng.finish(conn->take_job(), o.t_ns, conn->error_class(), std::move(detail));
        }
        return;
    }
    eng.opened_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t id = conn->id();
    const int fd = conn->fd();
    if (const int err = el.add(fd, kIoIn | kIoOut | kIoRdHup, id); err != 0) {
        // Without the epoll set nothing would ever wake this connection: fail it now.
        eng.finish(conn->take_job(), now_ns(), "client",
                   std::string("watching the socket failed: ") + std::strerror(err));
        return;  // the Connection closes its socket
    }
    Slot& s = conns.emplace(id, Slot{std::move(conn), true, false}).first->second;
    act(s, s.conn->opened());
}

// The connect to job's current address failed: on to the next address (as happy eyeballs would,
// one at a time), and new connections start there too; with none left, the request fails,
// naming every address tried. The connect timeout spans all the attempts.
void ClientEngine::Loop::connect_failed(std::unique_ptr<ClientJob> job, int64_t t, std::string detail) {
    const size_t n = eng.addrs_.size();
    if (n > 1) {
        if (!job->connect_errors.empty()) job->connect_errors += "; ";
        job->connect_errors += eng.addrs_[job->connect_addr].text + ": " + detail;
        detail = job->connect_errors;
    }
    if (job->connect_attempts < n) {
        first_addr = (job->connect_addr + 1) % n;
        open(std::move(job));
        return;
    }
    eng.finish(std::move(job), t, "connect", std::move(detail));
}

void ClientEngine::Loop::act(Slot& s, Outcome o) {
    Connection& c = *s.conn;
    switch (o.kind) {
        case Outcome::Kind::pending:
            watch(s);
            return;
        case Outcome::Kind::completed_keep:
            eng.finish(c.take_job(), o.t_ns, "", "");
            if (!eng.stopping_.load()) {
                watch(s);
                s.pooled = true;
                idle.push_back(c.id());
                return;
            }
            break;
        case Outcome::Kind::completed_close:
            eng.finish(c.take_job(), o.t_ns, "", "");
            break;
        case Outcome::Kind::failed:
            eng.finish(c.take_job(), o.t_ns, c.error_class(), c.take_error_detail());
            break;
        case Outcome::Kind::retry_stale:
            ready.push_front(c.take_job());
            break;
        case Outcome::Kind::closed:
            break;
        case Outcome::Kind::connect_failed: {
            std::unique_ptr<ClientJob> job = c.take_job();
            std::string detail = c.take_error_detail();
            close(s);  // before the next attempt, which may take its place
            connect_failed(std::move(job), o.t_ns, std::move(detail));
            return;
        }
    }
    close(s);
}

// Brings the watched set and the timers in line with what the connection now waits for.
void ClientEngine::Loop::watch(Slot& s) {
    Connection& c = *s.conn;
    if (c.wants_write() != s.watch_out) {
        const bool want = c.wants_write();
        // On failure the old interest stays and the next watch() tries again; a connection left
        // unwoken meanwhile ends at its timer, reported, never hung.
        if (el.modify(c.fd(), kIoIn | kIoRdHup | (want ? kIoOut : 0u), c.id()) == 0) s.watch_out = want;
    }
    if (c.take_timer_request()) el.schedule(c.deadline(), c.id(), c.timer_gen());
}

void ClientEngine::Loop::close(Slot& s) {
    const uint64_t id = s.conn->id();
    if (s.pooled) idle.erase(std::remove(idle.begin(), idle.end(), id), idle.end());
    el.remove(s.conn->fd());
    conns.erase(id);  // the Connection closes its socket
}

// Stopped: whatever is unfinished ends here, reported rather than dropped.
void ClientEngine::Loop::stop_all(const char* why) {
    const int64_t t = now_ns();
    std::vector<std::unique_ptr<ClientJob>> taken;
    {
        std::lock_guard<std::mutex> lock(eng.mu_);
        taken.swap(eng.incoming_);
    }
    for (auto& job : taken) eng.finish(std::move(job), t, "client", why);
    for (auto& job : ready) eng.finish(std::move(job), t, "client", why);
    for (auto& kv : scheduled) eng.finish(std::move(kv.second), t, "client", why);
    ready.clear();
    scheduled.clear();
    for (auto& kv : conns) {
        Connection& c = *kv.second.conn;
        if (c.job()) eng.finish(c.take_job(), t, "client", why);
        el.remove(c.fd());
    }
    conns.clear();
    idle.clear();
}

}  // namespace pytps
