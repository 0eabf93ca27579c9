// One client connection as a state machine. The engine (engine_loop.cpp) owns the epoll set,
// the timers, the pool and the schedule; it hands each readiness, timer and new request to a
// Connection and acts on the Outcome it returns. Every syscall and clock read goes through
// SocketOps, so tests/cpp/test_connection.cpp walks every transition with no network.
//
// The states and their transitions (the test checks that each is walked, and no other):
//   connecting    -> tls_handshake (TLS) | writing (plain) | failed
//   tls_handshake -> writing | failed
//   writing       -> reading_head | reading_body (the head came early) | closed | failed
//   reading_head  -> reading_body | closed | failed
//   reading_body  -> idle (keep-alive) | closed | failed
//   idle          -> writing (start(): the next request) | closed
//
// writing also reads: a server may answer before it has read the whole request (413, 400).
// That response is recorded, and the connection is not reused since the request was cut short;
// a send that fails reads what the socket still holds first, since that answer may be in it.
//
// A request whose connection ends (EOF, reset, failed send, close_notify) before any byte of a
// response: on a kept-alive connection it was stale, and the engine sends the request again on
// a new one (Outcome retry_stale); on a new connection it fails with class "no_response".
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "client/engine.hpp"
#include "client/job.hpp"
#include "client/socket_ops.hpp"
#include "client/tls.hpp"

namespace pytps {

struct RealtimeOffset;

enum class ConnState : uint8_t {
    connecting,     // TCP connect in progress
    tls_handshake,  // TCP up, TLS handshake in progress (still inside the connect timeout)
    writing,        // request bytes left to send (a response may already be arriving)
    reading_head,   // request sent, response head not complete
    reading_body,   // head complete, body arriving
    idle,           // kept alive between requests, in the engine's pool
    closed,         // ended with no error of the transport's own: the response ended (or was cut off:
                    // the recorder says), the server closed an idle one, or it was stale (sent again)
    failed,         // ended with the transport's own error: class connect, timeout, no_response or
                    // client
};
const char* state_name(ConnState s);

// What a Connection call came to; the engine acts on it. Anything but pending has ended the
// request on this connection (take_job() hands it over) or the connection itself. Two words,
// returned in registers on every read: a failure's class and detail stay on the Connection.
struct Outcome {
    enum class Kind : uint8_t {
        pending,          // waiting for I/O or a timer (wants_write() and take_timer_request() say which)
        completed_keep,   // the response ended; the connection is idle, poolable
        completed_close,  // the response ended (or was cut off: the recorder says); close it
        failed,           // error_class() and take_error_detail() say why; close it
        retry_stale,      // a kept-alive connection the server had closed: send the job again on a new one
        closed,           // an idle connection ended (no job)
        connect_failed,   // the TCP connect failed (class connect): the engine may try the next address
    };
    Kind kind = Kind::pending;
    int64_t t_ns = ClientJob::kNoTime;  // when the request ended (its t_done)
    bool ended() const { return kind != Kind::pending; }
};

// Shared by an engine's connections (and set up by hand in tests).
struct ConnConfig {
    const ClientOptions* options = nullptr;  // timeouts, response cap, kernel_timestamps, server_name
    TlsContext* tls = nullptr;               // nullptr: plain HTTP
    RealtimeOffset* realtime = nullptr;      // moves kernel stamps onto CLOCK_MONOTONIC
    std::atomic<uint64_t>* reads = nullptr;  // counts reads that returned data (may be null)
    char* buf = nullptr;                     // the engine thread's read buffer, shared by its connections
    size_t buf_len = 0;
    // Told of every state change (tests trace the transitions with it); null in the engine.
    void (*on_state)(void* ctx, uint64_t conn_id, ConnState from, ConnState to) = nullptr;
    void* on_state_ctx = nullptr;
};

// Readiness, as the engine maps epoll's events.
enum Ready : unsigned {
    kReadable = 1,  // EPOLLIN, EPOLLRDHUP, EPOLLHUP, EPOLLERR: a read will not block
    kWritable = 2,  // EPOLLOUT
    kHangup = 4,    // EPOLLERR, EPOLLHUP: fails a connect in progress
};

class Connection {
public:
    static constexpr int64_t kNoDeadline = INT64_MAX;

    Connection(uint64_t id, SocketOps& ops, const ConnConfig& cfg);
    ~Connection();  // closes the socket (the engine takes it out of epoll first)
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // A new connection for job: -> connecting, or failed / connect_failed (no socket) when it
    // cannot even start. The connect timeout runs from job->connect_start_ns when an earlier
    // address was tried already (set here on the first attempt).
    Outcome open(const sockaddr* addr, socklen_t len, std::unique_ptr<ClientJob> job);
    // Once the engine watches the socket: a connect that finished at once goes on (TLS or the request).
    Outcome opened();
    // idle -> writing: the next request on a kept-alive connection.
    Outcome start(std::unique_ptr<ClientJob> job);
    // Readiness of the socket (Ready bits).
    Outcome on_ready(unsigned ready);
    // A timer armed with timer_gen() == gen fired; a stale one (an earlier request's) is ignored.
    Outcome on_timer(uint64_t gen);

    // The request, once an Outcome has ended it (or when the engine stops).
    std::unique_ptr<ClientJob> take_job() { return std::move(job_); }
    const ClientJob* job() const { return job_.get(); }

    uint64_t id() const { return id_; }
    int fd() const { return fd_; }
    ConnState state() const { return state_; }
    bool reused() const { return reused_; }
    bool tls() const { return tls_ != nullptr; }
    // Whether the engine should watch for writability (ciphertext or request bytes wait).
    bool wants_write() const { return want_write_; }
    uint64_t timer_gen() const { return gen_; }
    // True once after the deadline moved: the engine arms a timer at deadline() with timer_gen().
    bool take_timer_request() {
        const bool r = arm_;
        arm_ = false;
        return r;
    }
    // After a failed or connect_failed Outcome: the transport's error class ("connect",
    // "timeout", "no_response", "client") and what happened.
    const char* error_class() const { return error_class_; }
    std::string take_error_detail() { return std::move(error_detail_); }
    // When this connection times out next, and why (kNoDeadline without a request).
    int64_t deadline(std::string* why = nullptr) const;

private:
    enum class Io { done, again, failed };

    uint64_t id_;
    SocketOps& ops_;
    const ConnConfig& cfg_;
    int fd_ = -1;
    ConnState state_ = ConnState::connecting;
    bool connected_at_once_ = false;
    bool reused_ = false;        // carried a response before this request
    bool want_write_ = true;     // a new socket is watched for the connect's writability
    bool request_sent_ = false;  // all of the request is on the wire (ciphertext too)
    bool send_failed_ = false;   // a send failed: nothing more is written, what is left is read
    bool arm_ = false;
    uint64_t gen_ = 0;        // timer generation: deadlines of an earlier phase are stale
    size_t write_off_ = 0;    // of job_->request: sent (plain), or taken by the TLS session
    int64_t t_start_ns_ = 0;  // connect or write start
    int64_t t_tls_start_ns_ = 0;
    int64_t last_data_ns_ = 0;
    std::unique_ptr<ClientJob> job_;
    const char* error_class_ = "";
    std::string error_detail_;
    std::unique_ptr<TlsSession> tls_;
    std::string tls_out_;  // ciphertext waiting to be sent, from tls_out_off_ on
    size_t tls_out_off_ = 0;

    void set_state(ConnState s) {
        if (cfg_.on_state != nullptr && s != state_) cfg_.on_state(cfg_.on_state_ctx, id_, state_, s);
        state_ = s;
    }
    // connection.cpp: lifecycle, plain HTTP, reads
    Outcome connected();
    Outcome start_request();
    Outcome write() { return tls_ ? tls_write() : plain_write(); }
    Outcome plain_write();
    Outcome read_ready();
    // The test hook test_read_delay_ns: the stamp of a read taken that much later (busy-waited).
    int64_t delayed_stamp(int64_t read_ns);
    Outcome plain_bytes(size_t n, int64_t t);
    Outcome eof(ssize_t n, int err, int64_t t);
    Outcome send_failed(int err);
    Outcome ended_early(int64_t t, const std::string& how);
    bool over_cap(size_t n);
    void request_done(int64_t t_send);
    void track_head();
    bool may_retry_stale() const;
    Outcome retry_stale();
    Outcome complete(int64_t t, bool keep);
    Outcome fail(int64_t t, const char* error_class, std::string detail);
    Outcome connect_failed(int64_t t, std::string detail);
    Outcome close_idle();
    Outcome response_too_large(int64_t t);
    // connection_tls.cpp
    Outcome start_tls(int64_t t);
    Outcome handshake();
    Outcome tls_write();
    Outcome tls_bytes(size_t n, int64_t t);
    Io flush_tls(int64_t& t_last, int& err);
};

}  // namespace pytps
