// Connection: its lifecycle, plain HTTP writes, and reads (the TLS steps are in connection_tls.cpp).
#include "client/connection.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/clock.hpp"

namespace pytps {

namespace {
std::string seconds(int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ns) / 1e9);
    return buf;
}

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

// The same words on every transport (pytps/records.py no_response_detail).
std::string no_response_detail(const std::string& how, bool resent) {
    std::string d = "no byte of a response came: " + how;
    if (resent) d += " (on a new connection: the request was sent again after a kept-alive connection was found closed)";
    return d;
}
}  // namespace

const char* state_name(ConnState s) {
    switch (s) {
        case ConnState::connecting: return "connecting";
        case ConnState::tls_handshake: return "tls_handshake";
        case ConnState::writing: return "writing";
        case ConnState::reading_head: return "reading_head";
        case ConnState::reading_body: return "reading_body";
        case ConnState::idle: return "idle";
        case ConnState::closed: return "closed";
        case ConnState::failed: return "failed";
    }
    return "?";
}

Connection::Connection(uint64_t id, SocketOps& ops, const ConnConfig& cfg) : id_(id), ops_(ops), cfg_(cfg) {}

Connection::~Connection() {
    if (fd_ >= 0) ops_.close(fd_);
}

Outcome Connection::open(const sockaddr* addr, socklen_t len, std::unique_ptr<ClientJob> job) {
    const int64_t t0 = ops_.now();
    job_ = std::move(job);
    job_->connection_id = id_;
    if (job_->connect_start_ns == ClientJob::kNoTime) job_->connect_start_ns = t0;
    ++job_->connect_attempts;
    const OpenResult r = ops_.open(addr, len, cfg_.options->kernel_timestamps);
    // Any step may depend on the address (no IPv6 socket where IPv6 is off): the next one may do.
    if (r.fd < 0) return connect_failed(ops_.now(), std::string(r.step) + " failed: " + std::strerror(r.err));
    fd_ = r.fd;
    t_start_ns_ = job_->connect_start_ns;
    set_state(ConnState::connecting);
    connected_at_once_ = !r.in_progress;
    want_write_ = true;
    return {};
}

Outcome Connection::opened() {
    if (state_ != ConnState::connecting) return {};
    if (connected_at_once_) return connected();
    ++gen_;
    arm_ = true;
    return {};
}

Outcome Connection::connected() {
    const int64_t t = ops_.now();
    job_->connect_ns = t - t_start_ns_;
    if (cfg_.tls == nullptr) return start_request();
    return start_tls(t);
}

Outcome Connection::start(std::unique_ptr<ClientJob> job) {
    job_ = std::move(job);
    job_->connection_id = id_;
    return start_request();
}

Outcome Connection::start_request() {
    set_state(ConnState::writing);
    write_off_ = 0;
    request_sent_ = false;
    ++gen_;
    t_start_ns_ = ops_.now();
    job_->t_write_start_ns = t_start_ns_;  // a resend's start replaces the stale attempt's
    last_data_ns_ = t_start_ns_;
    arm_ = true;  // a write that never completes times out too
    return write();
}

Outcome Connection::on_ready(unsigned ready) {
    switch (state_) {
        case ConnState::connecting: {
            const int err = ops_.connect_error(fd_);
            if (err == 0 && !(ready & kHangup)) return connected();
            return connect_failed(ops_.now(), std::string("connect failed: ") + std::strerror(err ? err : ECONNREFUSED));
        }
        case ConnState::idle:
            // Plain: the server closed a kept-alive connection (or sent unasked bytes). TLS: a
            // session ticket keeps it; anything else closes it.
            return tls_ ? read_ready() : close_idle();
        case ConnState::closed:
        case ConnState::failed:
            return {};
        default:
            break;
    }
    if (tls_) {
        if ((ready & kWritable) && want_write_) {  // ciphertext waits: the handshake's or the request's
            Outcome o = state_ == ConnState::tls_handshake ? handshake() : tls_write();
            if (o.ended()) return o;
        }
        if (ready & kReadable) return read_ready();
        return {};
    }
    if ((ready & kWritable) && write_off_ < job_->request.size() && !send_failed_) {
        Outcome o = plain_write();
        if (o.ended() || write_off_ < job_->request.size()) return o;
    }
    if (ready & kReadable) return read_ready();
    return {};
}

int64_t Connection::deadline(std::string* why) const {
    const ClientOptions& opt = *cfg_.options;
    if (state_ == ConnState::connecting) {
        if (why) *why = "connect timed out after " + seconds(opt.connect_timeout_ns) + " s";
        return t_start_ns_ + opt.connect_timeout_ns;
    }
    if (state_ == ConnState::tls_handshake) {  // inside the connect timeout
        if (why)
            *why = "connect timed out after " + seconds(opt.connect_timeout_ns) +
                   " s: TCP connected, but the TLS handshake did not finish (if the server speaks plain HTTP, "
                   "use an http:// URL)";
        return t_start_ns_ + opt.connect_timeout_ns;
    }
    if (!job_) return kNoDeadline;
    const int64_t limit = job_->bytes_read == 0 ? opt.first_byte_timeout_ns : opt.idle_timeout_ns;
    int64_t at = last_data_ns_ + limit;
    if (why) *why = "no data for " + seconds(limit) + " s (read timeout)";
    if (opt.total_timeout_ns > 0 && job_->t_send_ns != ClientJob::kNoTime &&
        job_->t_send_ns + opt.total_timeout_ns < at) {
        at = job_->t_send_ns + opt.total_timeout_ns;
        if (why) *why = "the response took longer than " + seconds(opt.total_timeout_ns) + " s (total timeout)";
    }
    return at;
}

Outcome Connection::on_timer(uint64_t gen) {
    if (gen != gen_ || !job_) return {};
    std::string why;
    const int64_t at = deadline(&why);
    const int64_t now = ops_.now();
    if (now >= at) return fail(now, "timeout", why);
    arm_ = true;  // data came since this deadline was set: check again later
    return {};
}

Outcome Connection::plain_write() {
    const std::string& req = job_->request;
    while (write_off_ < req.size()) {
        const IoResult r = ops_.send(fd_, req.data() + write_off_, req.size() - write_off_);
        if (r.n > 0) {
            write_off_ += static_cast<size_t>(r.n);
            if (write_off_ == req.size()) {
                want_write_ = false;
                request_done(r.t_ns);
                return {};
            }
            continue;
        }
        if (r.n < 0 && would_block(r.err)) {
            want_write_ = true;
            return {};
        }
        if (r.n < 0 && r.err == EINTR) continue;
        return send_failed(r.err);
    }
    return {};
}

// The server closed while we wrote. It may have answered first (a 413 to a body it would not
// read, then a reset), and that answer is still in the socket: read it before giving up.
Outcome Connection::send_failed(int err) {
    send_failed_ = true;
    want_write_ = false;
    Outcome o = read_ready();
    if (o.ended()) return o;
    return ended_early(ops_.now(), std::string("send failed: ") + std::strerror(err));
}

void Connection::request_done(int64_t t_send) {
    job_->t_send_ns = t_send;
    last_data_ns_ = t_send;
    request_sent_ = true;
    arm_ = true;
    set_state(job_->http->parser().headers_done() ? ConnState::reading_body : ConnState::reading_head);
}

void Connection::track_head() {
    if (state_ == ConnState::reading_head && job_->http->parser().headers_done()) set_state(ConnState::reading_body);
}

int64_t Connection::delayed_stamp(int64_t read_ns) {
    const int64_t until = read_ns + cfg_.options->test_read_delay_ns;
    int64_t now = ops_.now();
    while (now < until) now = ops_.now();
    return now;
}

Outcome Connection::read_ready() {
    const bool kernel_stamps = cfg_.options->kernel_timestamps;
    for (;;) {
        IoResult r = ops_.recv(fd_, cfg_.buf, cfg_.buf_len, kernel_stamps);
        if (r.n > 0) {
            if (cfg_.options->test_read_delay_ns > 0) r.t_ns = delayed_stamp(r.t_ns);
            if (cfg_.reads) cfg_.reads->store(cfg_.reads->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            const size_t n = static_cast<size_t>(r.n);
            if (r.kernel_real_ns != IoResult::kNoTime && job_ &&
                (state_ == ConnState::writing || state_ == ConnState::reading_head ||
                 state_ == ConnState::reading_body)) {
                // Over TLS too: the plaintext of this read is fed with stamp r.t_ns.
                job_->recv_ns.push_back(r.t_ns);
                job_->recv_kernel_ns.push_back(cfg_.realtime->to_monotonic_fresh(r.kernel_real_ns, r.t_ns));
            }
            Outcome o = tls_ ? tls_bytes(n, r.t_ns) : plain_bytes(n, r.t_ns);
            // Level-triggered: epoll tells of more. After a failed send nothing will: read to the end.
            if (o.ended() || (n < cfg_.buf_len && !send_failed_)) return o;
            continue;
        }
        if (r.n < 0 && would_block(r.err)) return {};
        if (r.n < 0 && r.err == EINTR) continue;
        return eof(r.n, r.err, r.t_ns);
    }
}

Outcome Connection::plain_bytes(size_t n, int64_t t) {
    last_data_ns_ = t;
    if (over_cap(n)) return response_too_large(t);
    const size_t used = job_->http->feed(cfg_.buf, n, t);
    track_head();
    const Http1ResponseParser& p = job_->http->parser();
    if (p.message_done() || p.failed()) {
        // Bytes after the response on a connection with one request in flight mean the server
        // and we disagree on framing; a request cut short leaves the server mid-request. Either
        // way the connection cannot carry another one.
        return complete(t, p.message_done() && p.keep_alive() && used == n && request_sent_);
    }
    return {};
}

// EOF (n == 0) or a read error at t.
Outcome Connection::eof(ssize_t n, int err, int64_t t) {
    if (state_ == ConnState::idle) return close_idle();  // TLS: the server closed a kept-alive connection
    if (state_ == ConnState::tls_handshake) {
        return fail(t, "connect",
                    n == 0 ? std::string("the server closed the connection during the TLS handshake")
                           : std::string("the connection failed during the TLS handshake: ") + std::strerror(err));
    }
    return ended_early(t, n == 0 ? std::string("the server closed the connection")
                                 : std::string("the connection failed: ") + std::strerror(err));
}

// The connection ended at t before the response did (how: EOF, a reset, a failed send).
Outcome Connection::ended_early(int64_t t, const std::string& how) {
    if (may_retry_stale()) return retry_stale();
    job_->http->finish_eof(t);  // the response ends here
    if (job_->bytes_read == 0) return fail(t, "no_response", no_response_detail(how, job_->retries > 0));
    return complete(t, false);  // the recorder says what was cut short
}

bool Connection::over_cap(size_t n) {
    job_->bytes_read += n;
    return job_->bytes_read > cfg_.options->max_response_bytes;
}

Outcome Connection::response_too_large(int64_t t) {
    return fail(t, "client",
                "the response is larger than max_response_bytes (" + std::to_string(cfg_.options->max_response_bytes) +
                    ")");
}

// The retry policy for a kept-alive connection the server had already closed: send again on a
// new connection, if nothing of a response was seen (so nothing is lost or counted twice). The
// resend's connection is new, so it is never sent a third time.
bool Connection::may_retry_stale() const { return reused_ && job_->bytes_read == 0; }

Outcome Connection::retry_stale() {
    ++job_->retries;
    job_->t_send_ns = ClientJob::kNoTime;  // the resend's is the one measured
    job_->connect_start_ns = ClientJob::kNoTime;
    job_->connect_attempts = 0;
    job_->connect_errors.clear();
    set_state(ConnState::closed);
    Outcome o;
    o.kind = Outcome::Kind::retry_stale;
    return o;
}

Outcome Connection::complete(int64_t t, bool keep) {
    ++gen_;
    Outcome o;
    o.t_ns = t;
    if (keep) {
        set_state(ConnState::idle);
        reused_ = true;
        want_write_ = false;
        o.kind = Outcome::Kind::completed_keep;
    } else {
        set_state(ConnState::closed);
        o.kind = Outcome::Kind::completed_close;
    }
    return o;
}

Outcome Connection::fail(int64_t t, const char* error_class, std::string detail) {
    set_state(ConnState::failed);
    Outcome o;
    o.kind = Outcome::Kind::failed;
    o.t_ns = t;
    error_class_ = error_class;
    error_detail_ = std::move(detail);
    return o;
}

Outcome Connection::connect_failed(int64_t t, std::string detail) {
    Outcome o = fail(t, "connect", std::move(detail));
    o.kind = Outcome::Kind::connect_failed;
    return o;
}

Outcome Connection::close_idle() {
    set_state(ConnState::closed);
    Outcome o;
    o.kind = Outcome::Kind::closed;
    return o;
}

}  // namespace pytps
