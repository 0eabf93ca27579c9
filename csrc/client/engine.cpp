#include "client/engine.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "client/engine_internal.hpp"
#include "client/job.hpp"
#include "io/rx_stamps.hpp"

namespace pytps {

ClientEngine::ClientEngine(const std::string& host, int port, ClientOptions options) : opt_(options) {
    if (opt_.max_connections < 1) throw std::invalid_argument("max_connections must be >= 1");
    if (opt_.first_byte_timeout_ns <= 0) opt_.first_byte_timeout_ns = opt_.idle_timeout_ns;
    if (opt_.tls) {
        if (opt_.server_name.empty()) opt_.server_name = host;
        TlsOptions t;
        t.verify = opt_.verify;
        t.ca_file = opt_.ca_file;
        t.ca_path = opt_.ca_path;
        tls_ = std::make_unique<TlsContext>(t);  // throws for a bad ca_file or a build without TLS
    }
    // Nothing resolved: every request then fails with class "connect", as an unreachable host would.
    addrs_ = resolve_addresses(host, port, opt_.addresses, &resolve_error_);
    // -1 is no error here: it only warms the kernel's stamping up, and each connection still
    // asks for stamps itself (a refusal fails its connect, see SystemSocketOps::open).
    if (opt_.kernel_timestamps) stamp_keeper_fd_ = switch_on_rx_stamps();
    notify_ = std::make_unique<Waker>();
    loop_ = std::make_unique<Loop>(*this);
    thread_ = std::thread([this] { run(); });
}

ClientEngine::~ClientEngine() {
    stop();
    if (stamp_keeper_fd_ >= 0) ::close(stamp_keeper_fd_);
}

void ClientEngine::submit(uint64_t id, std::string request, Dialect dialect, int64_t t_sched_ns) {
    std::vector<Submission> one;
    one.push_back(Submission{id, std::move(request), dialect, t_sched_ns});
    submit_many(std::move(one));
}

void ClientEngine::submit_many(std::vector<Submission> batch) {
    std::vector<std::unique_ptr<ClientJob>> jobs;
    jobs.reserve(batch.size());
    for (Submission& s : batch) {
        auto job = std::make_unique<ClientJob>();
        job->id = s.id;
        job->request = std::move(s.request);
        job->t_sched_ns = s.t_sched_ns;
        job->http = std::make_unique<HttpStreamRecorder>(s.dialect);
        jobs.push_back(std::move(job));
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_.load()) throw std::runtime_error("submit() after stop(): make a new ClientEngine");
        for (auto& job : jobs) incoming_.push_back(std::move(job));
    }
    loop_->el.wake();  // one wake-up for the whole batch
}

std::vector<ClientResult> ClientEngine::collect() {
    std::vector<ClientResult> out;
    std::lock_guard<std::mutex> lock(mu_);
    // Resets notify_fd so the next batch wakes the caller's loop again.
    notify_->drain();
    out.swap(done_);
    notified_ = false;
    return out;
}

void ClientEngine::stop() {
    if (!thread_.joinable()) return;
    {
        // Under the lock, so a submit() either lands before the thread's last look at
        // incoming_ (and is reported) or is refused.
        std::lock_guard<std::mutex> lock(mu_);
        stopping_.store(true);
    }
    loop_->el.wake();
    thread_.join();
}

int64_t ClientEngine::spin_window_ns() const { return loop_->el.spin_window_ns(); }

void ClientEngine::finish(std::unique_ptr<ClientJob> job, int64_t t_done, const char* error_class, std::string detail) {
    ClientResult r;
    r.id = job->id;
    r.t_send_ns = job->t_send_ns;
    r.t_write_start_ns = job->t_write_start_ns;
    r.t_done_ns = t_done;
    r.connect_ns = job->connect_ns;
    r.tls_ns = job->tls_ns;
    r.connection_id = job->connection_id;
    r.error_class = error_class;
    r.error_detail = std::move(detail);
    r.retries = job->retries;
    r.recv_ns = std::move(job->recv_ns);
    r.recv_kernel_ns = std::move(job->recv_kernel_ns);
    job->http->close(t_done);
    r.http = std::move(job->http);
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(r));
    if (!notified_) {
        // Unwritten, Python would not be woken for this batch: stay un-notified so that the
        // next finished request tries again.
        notified_ = notify_->signal();
    }
}

}  // namespace pytps
