#include "emulator/server.hpp"
#include "io/platform.hpp"
#include "io/rx_stamps.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/clock.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

namespace {
constexpr uint64_t kListenTag = ~uint64_t(0) - 1;

}  // namespace

Server::Server(EmulatorConfig c) : cfg_(std::move(c)), faults_(cfg_), model_(cfg_.max_batch, cfg_.batch_slowdown),
      prefix_cache_(cfg_.prefix_cache_tokens, cfg_.prefix_cache_block_tokens) {}

Server::~Server() { stop(); }

int Server::start() {
    if (started_) throw std::runtime_error("this emulator was already started; create a new one");
    started_ = true;
    listen_fd_ = open_socket(AF_INET, SOCK_STREAM, true);
    if (listen_fd_ < 0) throw std::runtime_error(std::string("socket() failed: ") + std::strerror(errno));
    // Until the thread runs, a failure closes what is open and throws.
    auto fail = [this](const std::string& message) {
        if (stamp_keeper_fd_ >= 0) ::close(stamp_keeper_fd_);
        stamp_keeper_fd_ = -1;
        loop_.reset();
        ::close(listen_fd_);
        listen_fd_ = -1;
        throw std::runtime_error(message);
    };
    int one = 1;
    if (setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        fail(std::string("setsockopt(SO_REUSEADDR) on the listening socket failed: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(cfg_.port));
    if (inet_pton(AF_INET, cfg_.host.c_str(), &addr.sin_addr) != 1) {
        ::close(listen_fd_);
        listen_fd_ = -1;
        throw std::runtime_error("host '" + cfg_.host + "' is not an IPv4 address; use 127.0.0.1");
    }
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 1024) != 0) {
        const int e = errno;
        ::close(listen_fd_);
        listen_fd_ = -1;
        throw std::runtime_error("cannot listen on " + cfg_.host + ":" + std::to_string(cfg_.port) + ": " +
                                 std::strerror(e) + (e == EADDRINUSE ? " (pick another port, or 0 for a free one)" : ""));
    }
    socklen_t len = sizeof addr;
    if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        fail(std::string("getsockname() on the listening socket failed: ") + std::strerror(errno));
    port_ = ntohs(addr.sin_port);
    // -1 when the kernel refuses (no SO_TIMESTAMPING): harmless, truth records then carry no
    // received_kernel_ns.
    stamp_keeper_fd_ = switch_on_rx_stamps();
    try {
        loop_ = std::make_unique<EventLoop>(cfg_.spin_ns);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    if (const int err = loop_->add(listen_fd_, kIoIn, kListenTag))
        fail(std::string("watching the listening socket failed: ") + std::strerror(err));
    // Last, as it starts a writer thread that only close_log() (from stop()) ends.
    if (!cfg_.truth_log.empty()) {
        try {
            truth_.open_log(cfg_.truth_log, cfg_.keep_truth);
        } catch (const std::exception& e) {
            fail(e.what());
        }
    }
    start_ns_ = now_ns();
    metrics_.start(start_ns_);  // the power model's energy counts from here
    running_ = true;
    thread_ = std::thread(&Server::loop_main, this);
    if (cfg_.realtime) {
        // A CPU hog on the same core preempts a normal thread for whole time slices (ms);
        // a SCHED_FIFO thread preempts it instead. Set from here so a refusal is an error.
        sched_param sp{};
        sp.sched_priority = 10;
        const int rc = pthread_setschedparam(thread_.native_handle(), SCHED_FIFO, &sp);
        if (rc != 0) {
            stop();
            throw std::runtime_error(std::string("realtime=True: the timing thread cannot get SCHED_FIFO (") +
                                     std::strerror(rc) + "); it needs root or CAP_SYS_NICE");
        }
    }
    return port_;
}

void Server::stop() {
    if (!running_.load()) return;
    stopping_ = true;
    loop_->wake();
    if (thread_.joinable()) thread_.join();
    running_ = false;
    truth_.close_log();
    if (stamp_keeper_fd_ >= 0) ::close(stamp_keeper_fd_);
    stamp_keeper_fd_ = -1;
}

Conn* Server::find(uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second.get();
}

void Server::loop_main() {
    // Named, as the client's engine is: the timing tests read each named thread's wait for a
    // CPU (/proc/self/task/*/schedstat) to tell the machine's delays from the code's.
    name_thread("pytps-emulator");
    // Timer slack would let the kernel defer our wake-ups by 50 µs; ask for none. Harmless if
    // refused: the adaptive spin window grows to cover the later wake-ups.
    minimise_timer_slack();
    std::vector<IoEvent> ready;
    std::vector<Deadline> due;
    ready.reserve(256);
    while (!stopping_.load(std::memory_order_relaxed)) {
        loop_->wait(ready, due);
        // Deadlines first: they are what the emulator promises to keep.
        for (const Deadline& d : due) {
            Conn* c = find(d.tag);
            if (c && c->timer_gen == d.gen && c->stream) on_stream_timer(*c);
        }
        for (const IoEvent& ev : ready) {
            if (ev.tag == EventLoop::kWakeTag) {
                loop_->drain_wake();
                continue;
            }
            if (ev.tag == kListenTag) {
                on_accept();
                continue;
            }
            Conn* c = find(ev.tag);
            if (!c) continue;
            if (ev.events & (kIoOut | kIoErr | kIoHup)) on_writable(*c);
            c = find(ev.tag);
            if (c && (ev.events & (kIoIn | kIoHup | kIoErr))) on_readable(*c);
        }
    }
    // Shutdown: open streams go to the truth as incomplete; nobody queued is admitted now.
    model_.close();
    std::vector<uint64_t> ids;
    for (auto& kv : conns_) ids.push_back(kv.first);
    for (uint64_t id : ids)
        if (Conn* c = find(id)) close_conn(*c);
    ::close(listen_fd_);
    listen_fd_ = -1;
}

void Server::on_accept() {
    for (;;) {
        int fd = accept_socket(listen_fd_, true);
        // Stamped at the accept, before anything else: a launcher's readiness is checked against it.
        if (fd >= 0 && first_accept_ns_.load(std::memory_order_relaxed) == 0)
            first_accept_ns_.store(now_ns(), std::memory_order_relaxed);
        if (fd < 0) {
            if (errno == ECONNABORTED) continue;  // this one is gone; take the next
            return;  // EAGAIN, or a transient error (EMFILE...): the next readiness retries
        }
        // A connection this loop cannot serve as promised is refused (closed at once: the
        // client sees the reset) rather than served with Nagle's delays or never read.
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
            ::close(fd);
            continue;
        }
        // Truth: when the kernel had each request (received_kernel_ns). Harmless if refused:
        // the records then carry no kernel stamp (None), as on a kernel without it.
        (void)enable_rx_stamps(fd);
        const uint64_t id = next_conn_id_++;
        if (loop_->add(fd, kIoIn, id) != 0) {  // ENOMEM, or ENOSPC at fs.epoll.max_user_watches
            ::close(fd);
            continue;
        }
        auto c = std::make_unique<Conn>();
        c->id = id;
        c->fd = fd;
        c->interest = kIoIn;
        conns_.emplace(c->id, std::move(c));
        n_accepted_.fetch_add(1, std::memory_order_relaxed);
        n_open_.fetch_add(1, std::memory_order_relaxed);
    }
}

void Server::update_interest(Conn& c) {
    uint32_t want = (c.peer_eof ? 0u : kIoIn) | (c.want_write ? kIoOut : 0u);
    // On failure (ENOMEM: the fd is registered, so nothing else) the old interest is kept, so
    // that the next update, at the next write or timer, tries again. Closing here instead
    // would pull the connection from under the callers, which go on using it.
    if (want != c.interest && loop_->modify(c.fd, want, c.id) == 0) c.interest = want;
}

void Server::close_conn(Conn& c) {
    if (c.stream) {
        c.stream->rec.client_closed = !stopping_.load();
        finish_stream(c, false);
    }
    loop_->remove(c.fd);
    ::close(c.fd);
    n_open_.fetch_sub(1, std::memory_order_relaxed);
    conns_.erase(c.id);  // destroys c
}

void Server::on_readable(Conn& c) {
    char buf[65536];
    for (;;) {
        int64_t kernel_real = INT64_MIN;
        ssize_t n = read_socket(c.fd, buf, sizeof buf, true, &kernel_real);
        if (n > 0) {
            if (kernel_real != INT64_MIN) c.rx_kernel_ns = realtime_.to_monotonic_fresh(kernel_real, now_ns());
            c.in.append(buf, static_cast<size_t>(n));
            if (static_cast<size_t>(n) < sizeof buf) break;
            continue;
        }
        if (n == 0) {
            c.peer_eof = true;
            break;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        close_conn(c);  // ECONNRESET and the like
        return;
    }
    if (c.in.size() > kMaxHeaderBytes + kMaxBodyBytes + 65536) {
        close_conn(c);  // a client pipelining without end while a response streams
        return;
    }
    const uint64_t id = c.id;
    if (!c.stream) try_requests(c);
    Conn* still = find(id);
    if (!still) return;
    if (still->peer_eof && still->stream && still->stream->load.state == LoadState::State::queued) {
        // Gone while waiting for a slot: a queue in front of a server drops it, rather than
        // admit a request nobody will read.
        still->stream->rec.client_closed = true;
        close_conn(*still);
        return;
    }
    if (still->peer_eof && !still->stream && still->out_off >= still->out.size()) {
        close_conn(*still);
        return;
    }
    update_interest(*still);
}

void Server::on_writable(Conn& c) {
    if (!flush(c)) return;
    after_output(c);
}

void Server::queue(Conn& c, const std::string& bytes) {
    c.out += bytes;
    c.queued_total += bytes.size();
}

void Server::add_mark(Conn& c, Mark::Kind kind, uint32_t first, uint32_t count) {
    c.marks.push_back(Mark{kind, c.queued_total, first, count});
}

bool Server::flush(Conn& c) {
    bool blocked = false;
    while (c.out_off < c.out.size()) {
        ssize_t n = send_nosignal(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off);
        if (n > 0) {
            c.out_off += static_cast<size_t>(n);
            c.written_total += static_cast<uint64_t>(n);
            n_writes_.fetch_add(1, std::memory_order_relaxed);
            n_bytes_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            blocked = true;
            n_blocked_.fetch_add(1, std::memory_order_relaxed);
            break;
        }
        if (c.stream) c.stream->rec.client_closed = true;
        close_conn(c);
        return false;
    }
    resolve_marks(c, now_ns());
    if (c.out_off >= c.out.size()) {
        c.out.clear();
        c.out_off = 0;
    }
    c.want_write = blocked;
    update_interest(c);
    return true;
}

void Server::resolve_marks(Conn& c, int64_t t) {
    while (!c.marks.empty() && c.marks.front().end <= c.written_total) {
        const Mark m = c.marks.front();
        c.marks.pop_front();
        if (!c.stream) continue;
        Stream& s = *c.stream;
        if (m.kind == Mark::headers) {
            s.rec.headers_sent_ns = t;
        } else if (m.kind == Mark::events) {
            for (uint32_t i = m.first; i < m.first + m.count; ++i) s.rec.sent_ns[i] = t;
            s.sent_events = m.first + m.count;
            n_events_.fetch_add(m.count, std::memory_order_relaxed);
        } else {
            s.rec.done_ns = t;
        }
    }
}

// Called whenever output may have drained: ends a finished response and serves what the
// client pipelined behind it.
void Server::after_output(Conn& c) {
    if (c.out_off < c.out.size()) return;
    const uint64_t id = c.id;
    if (c.stream && c.stream->ended) finish_stream(c, true);
    if (c.stream) return;
    if (c.close_after || c.peer_eof) {
        close_conn(c);
        return;
    }
    try_requests(c);
    if (Conn* still = find(id)) update_interest(*still);
}

EmulatorStats Server::stats() const {
    EmulatorStats s;
    s.connections_accepted = n_accepted_.load();
    s.first_accept_ns = first_accept_ns_.load();
    s.prefix_cache_resets = n_prefix_resets_.load();
    s.connections_open = n_open_.load();
    s.requests = n_requests_.load();
    s.generation_requests = n_gen_.load();
    s.streams_active = n_streams_.load();
    s.decoding = model_.decoding();
    s.queued = model_.queued();
    s.parse_bytes = n_parse_bytes_.load();
    s.events_sent = n_events_.load();
    s.writes = n_writes_.load();
    s.bytes_sent = n_bytes_.load();
    s.write_blocked = n_blocked_.load();
    s.faults = n_faults_.load();
    s.spins = loop_ ? loop_->spins() : 0;
    s.sleeps = loop_ ? loop_->sleeps() : 0;
    return s;
}

// ---- public facade ----

Emulator::Emulator(EmulatorConfig config) : server_(std::make_unique<Server>(std::move(config))) {}
Emulator::~Emulator() { server_->stop(); }
int Emulator::start() { return server_->start(); }
void Emulator::stop() {
    server_->stop();
    const std::string err = server_->truth().take_log_error();
    if (!err.empty()) throw std::runtime_error(err);
}
bool Emulator::running() const { return server_->running(); }
int Emulator::port() const { return server_->port(); }
const EmulatorConfig& Emulator::config() const { return server_->config(); }
std::vector<TruthRecord> Emulator::truth(bool clear) { return server_->truth().snapshot(clear); }
size_t Emulator::wait_truth(size_t n, int64_t timeout_ns) { return server_->truth().wait_for(n, timeout_ns); }
EmulatorStats Emulator::stats() const { return server_->stats(); }

}  // namespace pytps
