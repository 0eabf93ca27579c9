// ClientEngine: a native HTTP/1.1 client on its own thread (io/event_loop.hpp), so that no Python runs
// per socket read. Python submits pre-rendered requests; the engine sends them over a
// keep-alive connection pool, stamps every recv right after it returns, feeds the bytes to an
// HttpStreamRecorder, and hands finished requests back through a completion queue plus an
// descriptor (io/platform.hpp's Waker) that an asyncio loop can watch (one wake-up per batch, not per read).
//
// With options.tls the connections speak TLS (client/tls.hpp) over memory BIOs: the engine still
// does its own recv() and stamps it; the plaintext decrypted from that read carries its stamp.
//
// Error classes set here are the transport's own (docs/metrics.md): "connect", "timeout",
// "no_response", "client". HTTP statuses, framing errors, truncation and in-stream errors are read from the
// HttpStreamRecorder by the caller, exactly as for the asyncio transport.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/platform.hpp"
#include "core/dialects.hpp"
#include "core/http_stream_recorder.hpp"
#include "client/resolve.hpp"
#include "client/tls.hpp"

namespace pytps {

struct ClientJob;

struct ClientOptions {
    int max_connections = 100;
    int64_t connect_timeout_ns = 10'000'000'000;
    int64_t first_byte_timeout_ns = 0;  // 0: the idle timeout
    int64_t idle_timeout_ns = 120'000'000'000;  // no data for this long (from the send, then from each read)
    int64_t total_timeout_ns = 0;  // from the send to the end of the response; 0: none
    size_t max_response_bytes = size_t(256) << 20;  // bytes read for one response, head included
    int64_t spin_ns = 0;  // busy-wait window before scheduled sends (0: sleep only)
    // Also take the kernel's software receive stamp of every read (SO_TIMESTAMPING), moved
    // onto CLOCK_MONOTONIC; kept beside the engine's own stamp, never instead of it.
    bool kernel_timestamps = false;
    // A test hook (pytps calibrate's slowed client): busy-wait this long after each read before
    // stamping it, as a client with a slow read path would. 0 (always, outside that test): one
    // untaken branch per read.
    int64_t test_read_delay_ns = 0;
    // TLS (https://). The handshake counts against connect_timeout_ns.
    bool tls = false;
    std::string server_name;  // for SNI and certificate name checks; "": the host
    std::string ca_file;      // PEM CA bundle instead of the system's ("": the system's)
    std::string ca_path;      // a directory of hashed CA certificates, with or instead of ca_file
    bool verify = true;       // false: no certificate or name verification
    // IP literals to connect to, in this order, instead of resolving the host (which still names
    // the server for TLS): the Python side resolves once, for native and asyncio alike.
    std::vector<std::string> addresses;
};

struct ClientResult {
    static constexpr int64_t kNoTime = HttpStreamRecorder::kNoTime;
    uint64_t id = 0;
    int64_t t_send_ns = kNoTime;  // right before the write that completed the request
    int64_t t_write_start_ns = kNoTime;  // when the request's first write began: send = t_send - this
    int64_t t_done_ns = kNoTime;
    int64_t connect_ns = -1;  // duration of a new connection's connect; -1 on a reused one
    int64_t tls_ns = -1;      // duration of a new connection's TLS handshake; -1 on a reused or plain one
    uint64_t connection_id = 0;  // the engine's id of the Connection it was (last) sent on; 0: none
    std::string error_class;  // "" when the transport saw no error of its own
    std::string error_detail;
    int retries = 0;  // sent again (on a new connection) after a kept-alive one was found closed
    std::unique_ptr<HttpStreamRecorder> http;  // closed at t_done_ns
    // With kernel_timestamps: one pair per read that carried a kernel stamp, in read order.
    // recv_ns is the engine's stamp of that read (the one the recorder was fed), so an event
    // time found in recv_ns has its kernel arrival at the same index of recv_kernel_ns.
    std::vector<int64_t> recv_ns;
    std::vector<int64_t> recv_kernel_ns;
};

class ClientEngine {
public:
    // Throws std::invalid_argument for unusable options (an unreadable ca_file) and
    // std::runtime_error for options.tls in a build without TLS.
    ClientEngine(const std::string& host, int port, ClientOptions options);
    ~ClientEngine();
    ClientEngine(const ClientEngine&) = delete;
    ClientEngine& operator=(const ClientEngine&) = delete;

    struct Submission {
        uint64_t id;
        std::string request;
        Dialect dialect;
        int64_t t_sched_ns;
    };
    // Queues requests (callable from any thread) under one lock and one wake-up of the thread.
    void submit_many(std::vector<Submission> batch);
    // Queues a request (callable from any thread). t_sched_ns: send no earlier than this
    // CLOCK_MONOTONIC instant (kNoTime: at once).
    void submit(uint64_t id, std::string request, Dialect dialect, int64_t t_sched_ns = ClientResult::kNoTime);
    // Takes every finished request; also drains notify_fd.
    std::vector<ClientResult> collect();
    // Readable while collect() has something to return.
    int notify_fd() const { return notify_->fd(); }
    // Ends the thread; requests in flight finish with error class "client". Idempotent.
    void stop();

    uint64_t connections_opened() const { return opened_.load(std::memory_order_relaxed); }
    // How hard the engine thread works: returns from its event-loop wait, and reads that returned data.
    // Reads per output event near 1 means every event cost a wake-up and a recv.
    uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
    uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }
    // CPU time of the engine thread (CLOCK_THREAD_CPUTIME_ID), taken when it ends: 0 before stop().
    int64_t thread_cpu_ns() const { return thread_cpu_ns_.load(std::memory_order_acquire); }
    int64_t spin_window_ns() const;

private:
    ClientOptions opt_;
    std::unique_ptr<TlsContext> tls_;  // with opt_.tls
    std::vector<Address> addrs_;  // in the order they are tried
    std::string resolve_error_;
    std::unique_ptr<Waker> notify_;  // notify_fd
    int stamp_keeper_fd_ = -1;  // with kernel_timestamps: keeps the kernel's RX stamping switched on

    std::mutex mu_;  // guards incoming_, done_, notified_
    std::vector<std::unique_ptr<ClientJob>> incoming_;
    std::vector<ClientResult> done_;
    bool notified_ = false;
    std::atomic<bool> stopping_{false};
    std::atomic<uint64_t> opened_{0};
    std::atomic<uint64_t> wakeups_{0};  // written by the engine thread only
    std::atomic<uint64_t> reads_{0};
    std::atomic<int64_t> thread_cpu_ns_{0};

    // Loop-thread state.
    struct Loop;
    std::unique_ptr<Loop> loop_;
    std::thread thread_;

    void run();
    void finish(std::unique_ptr<ClientJob> job, int64_t t_done, const char* error_class, std::string detail);
};

}  // namespace pytps
