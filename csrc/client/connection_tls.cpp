// Connection over TLS: the session runs over memory BIOs (client/tls.hpp), so the socket reads
// and writes, and their stamps, stay the Connection's own. A read's ciphertext is pushed into
// the session and the plaintext it yields is fed with that read's stamp.
#include <cerrno>
#include <cstring>
#include <exception>

#include "client/connection.hpp"

namespace pytps {

using Tls = TlsSession::Result;

Outcome Connection::start_tls(int64_t t) {
    try {
        tls_ = std::make_unique<TlsSession>(*cfg_.tls, cfg_.options->server_name);
    } catch (const std::exception& e) {
        return fail(t, "connect", e.what());
    }
    set_state(ConnState::tls_handshake);
    t_tls_start_ns_ = t;
    ++gen_;
    arm_ = true;  // still the connect timeout, from the connect's start
    return handshake();
}

// Advances the handshake and sends what it made; once done, sends the request.
Outcome Connection::handshake() {
    const Tls r = tls_->handshake();
    int64_t t = ClientJob::kNoTime;
    int err = 0;
    const Io io = flush_tls(t, err);  // ClientHello, Finished, or the alert of a failure
    const int64_t now = ops_.now();
    if (r == Tls::failed) return fail(now, "connect", tls_->error());
    if (io == Io::failed)
        return fail(now, "connect", std::string("send failed during the TLS handshake: ") + std::strerror(err));
    want_write_ = io == Io::again;
    if (r == Tls::ok) {
        job_->tls_ns = now - t_tls_start_ns_;
        return start_request();
    }
    return {};
}

// Sends the session's pending ciphertext. t_last: the stamp taken right before the send that
// sent its last bytes (unchanged when there was nothing to send).
Connection::Io Connection::flush_tls(int64_t& t_last, int& err) {
    tls_->take_output(tls_out_);
    while (tls_out_off_ < tls_out_.size()) {
        const IoResult r = ops_.send(fd_, tls_out_.data() + tls_out_off_, tls_out_.size() - tls_out_off_);
        if (r.n > 0) {
            tls_out_off_ += static_cast<size_t>(r.n);
            t_last = r.t_ns;
            continue;
        }
        if (r.n < 0 && (r.err == EAGAIN || r.err == EWOULDBLOCK)) return Io::again;
        if (r.n < 0 && r.err == EINTR) continue;
        err = r.err;
        return Io::failed;
    }
    tls_out_.clear();
    tls_out_off_ = 0;
    return Io::done;
}

// Hands the rest of the request to the session, then sends whatever ciphertext it has. The
// request counts as sent (t_send) once all of it is encrypted and on the wire; a session that
// must read first (renegotiation) takes the rest after the next read.
Outcome Connection::tls_write() {
    if (send_failed_) return {};  // reading what the server sent before it closed
    const std::string& req = job_->request;
    if (write_off_ < req.size()) {
        size_t n = 0;
        const Tls r = tls_->write(req.data() + write_off_, req.size() - write_off_, &n);
        write_off_ += n;
        if (r == Tls::closed) return ended_early(ops_.now(), "the server closed the TLS session");
        if (r == Tls::failed) return ended_early(ops_.now(), "TLS error: " + tls_->error());
    }
    int64_t t = ClientJob::kNoTime;
    int err = 0;
    const Io io = flush_tls(t, err);
    if (io == Io::failed) return send_failed(err);
    want_write_ = io == Io::again;
    if (io == Io::done && write_off_ == req.size() && !request_sent_)
        request_done(t != ClientJob::kNoTime ? t : ops_.now());
    return {};
}

// n bytes of ciphertext read at t into the read buffer.
Outcome Connection::tls_bytes(size_t n, int64_t t) {
    char* const buf = cfg_.buf;
    const size_t cap = cfg_.buf_len;
    tls_->push(buf, n);  // copied: the buffer is free for the plaintext
    if (state_ == ConnState::tls_handshake) return handshake();
    if (state_ == ConnState::idle) {
        // Between requests only TLS housekeeping (a session ticket) may come; data,
        // close_notify or an error end the kept-alive connection.
        size_t m = 0;
        int64_t ts = 0;
        int err = 0;
        if (tls_->read(buf, cap, &m) != Tls::want_read || flush_tls(ts, err) == Io::failed) return close_idle();
        return {};
    }
    last_data_ns_ = t;
    for (;;) {
        size_t m = 0;
        const Tls r = tls_->read(buf, cap, &m);
        if (r == Tls::ok) {
            if (over_cap(m)) return response_too_large(t);
            const size_t used = job_->http->feed(buf, m, t);
            track_head();
            const Http1ResponseParser& p = job_->http->parser();
            if (p.message_done() || p.failed()) {
                // As on plain HTTP: bytes after the response, or a request cut short, mean no reuse.
                bool keep = p.message_done() && p.keep_alive() && used == m && request_sent_;
                size_t extra = 0;
                if (keep) keep = tls_->read(buf, cap, &extra) == Tls::want_read;
                return complete(t, keep);
            }
            continue;
        }
        if (r == Tls::want_read) break;
        // close_notify or a TLS error (an alert) ends the connection, and the response with it,
        // as a plain EOF or reset does.
        return ended_early(t, r == Tls::closed ? std::string("the server closed the TLS session")
                                               : "TLS error: " + tls_->error());
    }
    // The session may have output (a key update, a renegotiation), or may now take the rest of
    // a request that waited for these bytes.
    return tls_write();
}

}  // namespace pytps
