// The ClientEngine's thread: connections, writes, reads, timeouts, the scheduled sends.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/clock.hpp"
#include "client/engine_internal.hpp"
#include "io/rx_stamps.hpp"

namespace pytps {

namespace {
std::string seconds(int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ns) / 1e9);
    return buf;
}

enum class Io { done, again, failed };
using Tls = TlsSession::Result;
}  // namespace

void ClientEngine::run() {
    Loop& L = *loop_;
    std::vector<epoll_event> ready;
    std::vector<Deadline> due;
    std::vector<std::unique_ptr<Job>> taken;

    auto close_conn = [&](Conn& c) {
        if (c.state == Conn::State::idle) L.idle.erase(std::remove(L.idle.begin(), L.idle.end(), c.id), L.idle.end());
        L.el.remove(c.fd);
        ::close(c.fd);
        L.conns.erase(c.id);  // destroys c
    };

    auto arm = [&](Conn& c, int64_t due_ns) { L.el.schedule(due_ns, c.id, c.gen); };

    // When this request's connection times out next, and why.
    auto expiry = [&](const Conn& c, std::string* why) -> int64_t {
        if (c.state == Conn::State::connecting) {
            if (why) *why = "connect timed out after " + seconds(opt_.connect_timeout_ns) + " s";
            return c.t_start_ns + opt_.connect_timeout_ns;
        }
        if (c.state == Conn::State::handshaking) {  // inside the connect timeout
            if (why)
                *why = "connect timed out after " + seconds(opt_.connect_timeout_ns) +
                       " s: TCP connected, but the TLS handshake did not finish (if the server speaks plain HTTP, "
                       "use an http:// URL)";
            return c.t_start_ns + opt_.connect_timeout_ns;
        }
        const Job& j = *c.job;
        const int64_t limit = j.bytes_read == 0 ? opt_.first_byte_timeout_ns : opt_.idle_timeout_ns;
        int64_t at = c.last_data_ns + limit;
        if (why) *why = "no data for " + seconds(limit) + " s (read timeout)";
        if (opt_.total_timeout_ns > 0 && j.t_send_ns != ClientResult::kNoTime &&
            j.t_send_ns + opt_.total_timeout_ns < at) {
            at = j.t_send_ns + opt_.total_timeout_ns;
            if (why) *why = "the response took longer than " + seconds(opt_.total_timeout_ns) + " s (total timeout)";
        }
        return at;
    };

    auto set_out = [&](Conn& c, bool want) {
        if (c.want_out == want) return;
        c.want_out = want;
        L.el.modify(c.fd, EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u), c.id);
    };

    // The request is over on this connection (the recorder says how); keep or close it.
    auto complete = [&](Conn& c, int64_t t, bool keep) {
        finish(std::move(c.job), t, "", "");
        ++c.gen;
        if (keep && !stopping_.load()) {
            c.state = Conn::State::idle;
            c.reused = true;
            set_out(c, false);
            L.idle.push_back(c.id);
        } else {
            close_conn(c);
        }
    };

    auto fail = [&](Conn& c, int64_t t, const char* cls, std::string detail) {
        finish(std::move(c.job), t, cls, std::move(detail));
        close_conn(c);
    };

    // A reused keep-alive connection the server had already closed: send once more on a new
    // one (nothing of a response was seen, so nothing is lost or counted twice).
    auto retry_stale = [&](Conn& c) -> bool {
        Job& j = *c.job;
        if (!c.reused || j.bytes_read != 0 || j.retried) return false;
        j.retried = true;
        j.t_send_ns = ClientResult::kNoTime;
        L.ready.push_front(std::move(c.job));
        close_conn(c);
        return true;
    };

    // TLS: sends the session's pending ciphertext. t_last: the stamp taken right before the
    // send that sent its last bytes (unchanged when there was nothing to send).
    auto flush_tls = [&](Conn& c, int64_t& t_last, int& err) -> Io {
        c.tls->take_output(c.tls_out);
        while (c.tls_out_off < c.tls_out.size()) {
            const int64_t t = now_ns();
            const ssize_t n = ::send(c.fd, c.tls_out.data() + c.tls_out_off, c.tls_out.size() - c.tls_out_off,
                                     MSG_NOSIGNAL);
            if (n > 0) {
                c.tls_out_off += static_cast<size_t>(n);
                t_last = t;
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::again;
            if (n < 0 && errno == EINTR) continue;
            err = errno;
            return Io::failed;
        }
        c.tls_out.clear();
        c.tls_out_off = 0;
        return Io::done;
    };

    // TLS: hands the rest of the request to the session, then sends whatever ciphertext it
    // has. The request counts as sent (t_send) once all of it is encrypted and on the wire;
    // a session that must read first (renegotiation) takes the rest after the next read.
    auto tls_write = [&](Conn& c) {
        Job& j = *c.job;
        const std::string& req = j.request;
        if (c.write_off < req.size()) {
            size_t n = 0;
            const Tls r = c.tls->write(req.data() + c.write_off, req.size() - c.write_off, &n);
            c.write_off += n;
            if (r == Tls::failed || r == Tls::closed) {
                const int64_t te = now_ns();
                if (retry_stale(c)) return;
                j.http->finish_eof(te);
                fail(c, te, "", r == Tls::closed ? "the server closed the TLS session" : c.tls->error());
                return;
            }
        }
        int64_t t = ClientResult::kNoTime;
        int err = 0;
        const Io io = flush_tls(c, t, err);
        if (io == Io::failed) {
            if (retry_stale(c)) return;
            const int64_t te = now_ns();
            c.job->http->finish_eof(te);
            fail(c, te, "", std::string("send failed: ") + std::strerror(err));
            return;
        }
        set_out(c, io == Io::again);
        if (io == Io::done && c.write_off == req.size() && j.t_send_ns == ClientResult::kNoTime) {
            j.t_send_ns = t != ClientResult::kNoTime ? t : now_ns();
            c.last_data_ns = j.t_send_ns;
            arm(c, expiry(c, nullptr));
        }
    };

    auto try_write = [&](Conn& c) {
        if (c.tls) {
            tls_write(c);
            return;
        }
        Job& j = *c.job;
        const std::string& req = j.request;
        while (c.write_off < req.size()) {
            const int64_t t = now_ns();
            const ssize_t n = ::send(c.fd, req.data() + c.write_off, req.size() - c.write_off, MSG_NOSIGNAL);
            if (n > 0) {
                c.write_off += static_cast<size_t>(n);
                if (c.write_off == req.size()) {
                    j.t_send_ns = t;
                    c.last_data_ns = t;
                    set_out(c, false);
                    arm(c, expiry(c, nullptr));
                    return;
                }
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                set_out(c, true);
                return;
            }
            if (n < 0 && errno == EINTR) continue;
            const int err = errno;
            if (retry_stale(c)) return;
            // The server closed while we wrote: report it as a response that never came.
            const int64_t te = now_ns();
            c.job->http->finish_eof(te);
            fail(c, te, "", std::string("send failed: ") + std::strerror(err));
            return;
        }
    };

    auto start = [&](Conn& c, std::unique_ptr<Job> job) {
        c.job = std::move(job);
        c.state = Conn::State::busy;
        c.write_off = 0;
        ++c.gen;
        c.t_start_ns = now_ns();
        c.last_data_ns = c.t_start_ns;
        arm(c, expiry(c, nullptr));  // a write that never completes times out too
        try_write(c);
    };

    // Advances a TLS handshake and sends what it made; once done, sends the request. May close c.
    auto tls_handshake = [&](Conn& c) {
        const Tls r = c.tls->handshake();
        int64_t t = ClientResult::kNoTime;
        int err = 0;
        const Io io = flush_tls(c, t, err);  // ClientHello, Finished, or the alert of a failure
        const int64_t now = now_ns();
        if (r == Tls::failed) {
            fail(c, now, "connect", c.tls->error());
            return;
        }
        if (io == Io::failed) {
            fail(c, now, "connect", std::string("send failed during the TLS handshake: ") + std::strerror(err));
            return;
        }
        set_out(c, io == Io::again);
        if (r == Tls::ok) {
            c.job->tls_ns = now - c.t_tls_start_ns;
            start(c, std::move(c.job));
        }
    };

    // The TCP connection is up: send the request, or start the TLS handshake first.
    auto connected = [&](Conn& c) {
        const int64_t t = now_ns();
        c.job->connect_ns = t - c.t_start_ns;
        if (!tls_) {
            start(c, std::move(c.job));
            return;
        }
        try {
            c.tls = std::make_unique<TlsSession>(*tls_, opt_.server_name);
        } catch (const std::exception& e) {
            fail(c, t, "connect", e.what());
            return;
        }
        c.state = Conn::State::handshaking;
        c.t_tls_start_ns = t;
        ++c.gen;
        arm(c, expiry(c, nullptr));  // still the connect timeout, from the connect's start
        tls_handshake(c);
    };

    auto open_conn = [&](std::unique_ptr<Job> job) {
        const int64_t t0 = now_ns();
        if (!resolve_error_.empty()) {
            finish(std::move(job), now_ns(), "connect", resolve_error_);
            return;
        }
        const int fd = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            finish(std::move(job), now_ns(), "connect", std::string("socket failed: ") + std::strerror(errno));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (opt_.kernel_timestamps) enable_rx_stamps(fd);
        const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
        if (rc < 0 && errno != EINPROGRESS) {
            const int err = errno;
            ::close(fd);
            finish(std::move(job), now_ns(), "connect", std::string("connect failed: ") + std::strerror(err));
            return;
        }
        opened_.fetch_add(1, std::memory_order_relaxed);
        auto conn = std::make_unique<Conn>();
        Conn& c = *conn;
        c.id = L.next_conn++;
        c.fd = fd;
        c.t_start_ns = t0;
        c.job = std::move(job);
        L.conns.emplace(c.id, std::move(conn));
        c.want_out = true;
        L.el.add(fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP, c.id);
        if (rc == 0) {
            connected(c);
        } else {
            c.state = Conn::State::connecting;
            ++c.gen;
            arm(c, expiry(c, nullptr));
        }
    };

    auto dispatch = [&] {
        while (!L.ready.empty()) {
            Conn* c = nullptr;
            while (!L.idle.empty() && c == nullptr) {
                auto it = L.conns.find(L.idle.back());
                L.idle.pop_back();
                if (it != L.conns.end() && it->second->state == Conn::State::idle) c = it->second.get();
            }
            std::unique_ptr<Job> job = std::move(L.ready.front());
            L.ready.pop_front();
            if (c != nullptr) {
                start(*c, std::move(job));
            } else if (static_cast<int>(L.conns.size()) < opt_.max_connections) {  // no idle one left
                open_conn(std::move(job));
            } else {
                L.ready.push_front(std::move(job));
                return;  // every connection is busy; a finishing one picks this up
            }
        }
    };

    // Counts n more response bytes (plaintext over TLS) read at t; past max_response_bytes the
    // request fails with "client" and c is closed (returns true).
    auto over_cap = [&](Conn& c, size_t n, int64_t t) -> bool {
        Job& j = *c.job;
        j.bytes_read += n;
        if (j.bytes_read <= opt_.max_response_bytes) return false;
        fail(c, t, "client", "the response is larger than max_response_bytes (" +
                                 std::to_string(opt_.max_response_bytes) + ")");
        return true;
    };

    // TLS: n bytes of ciphertext read at t into L.buf. The plaintext they yield is fed with the
    // read's stamp t. Returns whether c is still open and reading (false: it finished, failed
    // or was closed).
    auto tls_bytes = [&](Conn& c, size_t n, int64_t t) -> bool {
        const uint64_t id = c.id;
        c.tls->push(L.buf.data(), n);  // copied: L.buf is free for the plaintext
        if (c.state == Conn::State::handshaking) {
            tls_handshake(c);
            return L.conns.count(id) != 0;
        }
        if (c.state == Conn::State::idle) {
            // Between requests only TLS housekeeping (a session ticket) may come; data,
            // close_notify or an error end the kept-alive connection.
            size_t m = 0;
            int64_t ts = 0;
            int err = 0;
            if (c.tls->read(L.buf.data(), L.buf.size(), &m) != Tls::want_read || flush_tls(c, ts, err) == Io::failed) {
                close_conn(c);
                return false;
            }
            return true;
        }
        Job& j = *c.job;
        c.last_data_ns = t;
        for (;;) {
            size_t m = 0;
            const Tls r = c.tls->read(L.buf.data(), L.buf.size(), &m);
            if (r == Tls::ok) {
                if (over_cap(c, m, t)) return false;
                const size_t used = j.http->feed(L.buf.data(), m, t);
                const Http1ResponseParser& p = j.http->parser();
                if (p.message_done() || p.failed()) {
                    // As on plain HTTP: bytes after the response mean no reuse.
                    bool keep = p.message_done() && p.keep_alive() && used == m;
                    size_t extra = 0;
                    if (keep) keep = c.tls->read(L.buf.data(), L.buf.size(), &extra) == Tls::want_read;
                    complete(c, t, keep);
                    return false;
                }
                continue;
            }
            if (r == Tls::want_read) break;
            // close_notify or a TLS error: the response ends here, as at a plain EOF.
            if (retry_stale(c)) return false;
            j.http->finish_eof(t);
            if (r == Tls::closed) {
                complete(c, t, false);
            } else {
                fail(c, t, "", c.tls->error());
            }
            return false;
        }
        // The session may have output (a key update, a renegotiation), or may now take the
        // rest of a request that waited for these bytes.
        tls_write(c);
        return L.conns.count(id) != 0;
    };

    auto on_read = [&](Conn& c) {
        for (;;) {
            int64_t kernel_real = ClientResult::kNoTime;
            const ssize_t n = read_socket(c.fd, L.buf.data(), L.buf.size(), opt_.kernel_timestamps, &kernel_real);
            const int64_t t = now_ns();
            if (n > 0) {
                reads_.store(reads_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
                if (kernel_real != ClientResult::kNoTime && c.state == Conn::State::busy && c.job) {
                    // Over TLS too: the plaintext of this read is fed with stamp t.
                    c.job->recv_ns.push_back(t);
                    c.job->recv_kernel_ns.push_back(L.realtime.to_monotonic_fresh(kernel_real, t));
                }
            }
            if (n > 0 && c.tls) {
                if (!tls_bytes(c, static_cast<size_t>(n), t)) return;
                if (static_cast<size_t>(n) < L.buf.size()) return;  // level-triggered: epoll tells of more
                continue;
            }
            if (n > 0) {
                Job& j = *c.job;
                c.last_data_ns = t;
                if (over_cap(c, static_cast<size_t>(n), t)) return;
                const size_t used = j.http->feed(L.buf.data(), static_cast<size_t>(n), t);
                const Http1ResponseParser& p = j.http->parser();
                if (p.message_done() || p.failed()) {
                    // Bytes after the response on a connection with one request in flight
                    // mean the server and we disagree on framing: do not reuse it.
                    complete(c, t, p.message_done() && p.keep_alive() && used == static_cast<size_t>(n));
                    return;
                }
                if (static_cast<size_t>(n) < L.buf.size()) return;  // level-triggered: epoll tells of more
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
            if (n < 0 && errno == EINTR) continue;
            if (c.state == Conn::State::idle) {  // TLS: the server closed a kept-alive connection
                close_conn(c);
                return;
            }
            if (c.state == Conn::State::handshaking) {
                fail(c, t, "connect", n == 0 ? std::string("the server closed the connection during the TLS handshake")
                                             : std::string("the connection failed during the TLS handshake: ") +
                                                   std::strerror(errno));
                return;
            }
            if (retry_stale(c)) return;
            c.job->http->finish_eof(t);  // EOF, or a reset: the response ends here
            complete(c, t, false);
            return;
        }
    };

    auto on_event = [&](Conn& c, uint32_t events) {
        if (c.state == Conn::State::idle && c.tls) {
            on_read(c);  // a session ticket keeps it; anything else closes it
            return;
        }
        if (c.state == Conn::State::idle) {
            close_conn(c);  // the server closed a kept-alive connection (or sent unasked bytes)
            return;
        }
        if (c.state == Conn::State::connecting) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
                connected(c);
            } else if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
                fail(c, now_ns(), "connect", std::string("connect failed: ") + std::strerror(err ? err : ECONNREFUSED));
            }
            return;
        }
        if (c.tls) {
            if ((events & EPOLLOUT) && c.want_out) {  // ciphertext waits: the handshake's or the request's
                const uint64_t id = c.id;
                if (c.state == Conn::State::handshaking) {
                    tls_handshake(c);
                } else {
                    tls_write(c);
                }
                if (L.conns.count(id) == 0) return;
            }
            if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_read(c);
            return;
        }
        if ((events & EPOLLOUT) && c.write_off < c.job->request.size()) {
            const uint64_t id = c.id;
            try_write(c);  // may close c
            auto it = L.conns.find(id);
            if (it == L.conns.end() || !it->second->job || c.write_off < c.job->request.size()) return;
        }
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_read(c);
    };

    pthread_setname_np(pthread_self(), "pytps-engine");  // so per-thread CPU can be told apart
    while (!stopping_.load()) {
        L.el.wait(ready, due);
        wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        for (const epoll_event& ev : ready) {
            if (ev.data.u64 == EventLoop::kWakeTag) {
                L.el.drain_wake();
                {
                    std::lock_guard<std::mutex> lock(mu_);
                    taken.swap(incoming_);
                }
                const int64_t now = now_ns();
                for (auto& job : taken) {
                    if (job->t_sched_ns != ClientResult::kNoTime && job->t_sched_ns > now) {
                        L.el.schedule(job->t_sched_ns, kClientSchedTag, 0);
                        L.scheduled.emplace(job->t_sched_ns, std::move(job));
                    } else {
                        L.ready.push_back(std::move(job));
                    }
                }
                taken.clear();
                continue;
            }
            auto it = L.conns.find(ev.data.u64);
            if (it != L.conns.end()) on_event(*it->second, ev.events);
        }
        for (const Deadline& d : due) {
            if (d.tag == kClientSchedTag) {
                const int64_t now = now_ns();
                while (!L.scheduled.empty() && L.scheduled.begin()->first <= now) {
                    L.ready.push_back(std::move(L.scheduled.begin()->second));
                    L.scheduled.erase(L.scheduled.begin());
                }
                continue;
            }
            auto it = L.conns.find(d.tag);
            if (it == L.conns.end() || it->second->gen != d.gen || !it->second->job) continue;
            Conn& c = *it->second;
            std::string why;
            const int64_t at = expiry(c, &why);
            const int64_t now = now_ns();
            if (now >= at) {
                fail(c, now, "timeout", why);
            } else {
                arm(c, at);  // data came since this deadline was set: check again later
            }
        }
        dispatch();
    }

    // Stopped: whatever is unfinished ends here, reported rather than dropped.
    const int64_t t = now_ns();
    const char* why = "the client engine stopped before the response ended";
    {
        std::lock_guard<std::mutex> lock(mu_);
        taken.swap(incoming_);
    }
    for (auto& job : taken) finish(std::move(job), t, "client", why);
    for (auto& job : L.ready) finish(std::move(job), t, "client", why);
    for (auto& kv : L.scheduled) finish(std::move(kv.second), t, "client", why);
    L.ready.clear();
    L.scheduled.clear();
    for (auto& kv : L.conns) {
        Conn& c = *kv.second;
        if (c.job) finish(std::move(c.job), t, "client", why);
        L.el.remove(c.fd);
        ::close(c.fd);
    }
    L.conns.clear();
    L.idle.clear();
    thread_cpu_ns_.store(pytps::thread_cpu_ns(), std::memory_order_release);
}

}  // namespace pytps
