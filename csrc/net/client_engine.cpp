#include "net/client_engine.hpp"

#include <linux/net_tstamp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "net/client_engine_internal.hpp"

namespace pytps {

namespace {

// The kernel switches software RX stamping on for the first socket that asks from a work
// queue, a little later, so the first packets of a fresh process would come without stamps.
// A UDP socket that asks too, kept open while the engine lives, switches it on now: it sends
// itself datagrams until one comes back stamped (at most ~200 ms). -1 if it could not.
int switch_on_rx_stamps() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    timeval tv{0, 10'000};
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
        ::close(fd);
        return -1;
    }
    for (int i = 0; i < 20; ++i) {
        char byte = 0;
        if (::sendto(fd, &byte, 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a) != 1) break;
        alignas(cmsghdr) char control[256];
        iovec iov{&byte, 1};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        if (::recvmsg(fd, &msg, 0) == 1 && CMSG_FIRSTHDR(&msg) != nullptr) return fd;
    }
    return fd;  // no stamp yet; keep asking anyway, the switch may still come
}

}  // namespace

ClientEngine::ClientEngine(const std::string& host, int port, ClientOptions options) : opt_(options) {
    if (opt_.max_connections < 1) throw std::invalid_argument("max_connections must be >= 1");
    if (opt_.first_byte_timeout_ns <= 0) opt_.first_byte_timeout_ns = opt_.idle_timeout_ns;
    if (opt_.tls) {
        if (opt_.server_name.empty()) opt_.server_name = host;
        TlsOptions t;
        t.verify = opt_.verify;
        t.ca_file = opt_.ca_file;
        tls_ = std::make_unique<TlsContext>(t);  // throws for a bad ca_file or a build without TLS
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port_s = std::to_string(port);
    const int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
    if (rc != 0 || res == nullptr) {
        // Every request then fails with class "connect", as an unreachable host would.
        resolve_error_ = "cannot resolve " + host + ": " + gai_strerror(rc);
    } else {
        std::memcpy(&addr_, res->ai_addr, res->ai_addrlen);
        addr_len_ = res->ai_addrlen;
    }
    if (res) freeaddrinfo(res);
    if (opt_.kernel_timestamps) stamp_keeper_fd_ = switch_on_rx_stamps();
    notify_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (notify_fd_ < 0) throw std::runtime_error(std::string("eventfd failed: ") + std::strerror(errno));
    loop_ = std::make_unique<Loop>(opt_.spin_ns);
    thread_ = std::thread([this] { run(); });
}

ClientEngine::~ClientEngine() {
    stop();
    if (notify_fd_ >= 0) ::close(notify_fd_);
    if (stamp_keeper_fd_ >= 0) ::close(stamp_keeper_fd_);
}

void ClientEngine::submit(uint64_t id, std::string request, Dialect dialect, int64_t t_sched_ns) {
    std::vector<Submission> one;
    one.push_back(Submission{id, std::move(request), dialect, t_sched_ns});
    submit_many(std::move(one));
}

void ClientEngine::submit_many(std::vector<Submission> batch) {
    std::vector<std::unique_ptr<Job>> jobs;
    jobs.reserve(batch.size());
    for (Submission& s : batch) {
        auto job = std::make_unique<Job>();
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
    uint64_t v;
    ssize_t r = ::read(notify_fd_, &v, sizeof v);
    (void)r;
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

void ClientEngine::finish(std::unique_ptr<Job> job, int64_t t_done, const char* error_class, std::string detail) {
    ClientResult r;
    r.id = job->id;
    r.t_send_ns = job->t_send_ns;
    r.t_done_ns = t_done;
    r.connect_ns = job->connect_ns;
    r.tls_ns = job->tls_ns;
    r.error_class = error_class;
    r.error_detail = std::move(detail);
    r.recv_ns = std::move(job->recv_ns);
    r.recv_kernel_ns = std::move(job->recv_kernel_ns);
    job->http->close(t_done);
    r.http = std::move(job->http);
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(r));
    if (!notified_) {
        notified_ = true;
        uint64_t one = 1;
        ssize_t w = ::write(notify_fd_, &one, sizeof one);
        (void)w;
    }
}

}  // namespace pytps
