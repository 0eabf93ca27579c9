#include "calibration/read_floor.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "io/event_loop.hpp"
#include "io/platform.hpp"

namespace pytps {

namespace {

[[noreturn]] void fail(const char* what) {
    throw std::runtime_error(std::string("measure_read_floor: ") + what + " failed: " + std::strerror(errno));
}

struct Fds {
    std::vector<int> fds;
    ~Fds() {
        for (int fd : fds) ::close(fd);
    }
    int add(int fd) {
        if (fd >= 0) fds.push_back(fd);
        return fd;
    }
};

}  // namespace

ReadFloor measure_read_floor(int connections, int64_t gap_ns, int64_t duration_ns, size_t message_bytes) {
    if (connections < 1 || gap_ns < 1 || duration_ns < 1 || message_bytes < 1)
        throw std::invalid_argument("measure_read_floor: connections, gap_ns, duration_ns and message_bytes must be >= 1");
    Fds owned;
    const int ls = owned.add(open_socket(AF_INET, SOCK_STREAM, false));
    if (ls < 0) fail("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("bind");
    if (::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) fail("getsockname");
    if (::listen(ls, connections) != 0) fail("listen");
    std::vector<int> readers, writers;
    for (int i = 0; i < connections; ++i) {
        const int c = owned.add(open_socket(AF_INET, SOCK_STREAM, false));
        if (c < 0) fail("socket");
        if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("connect");
        const int s = accept_socket(ls, false);
        if (owned.add(s) < 0) fail("accept");
        int one = 1;
        if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("setsockopt(TCP_NODELAY)");
        const int flags = fcntl(c, F_GETFL);
        if (flags < 0 || fcntl(c, F_SETFL, flags | O_NONBLOCK) != 0) fail("fcntl(O_NONBLOCK)");
        readers.push_back(c);
        writers.push_back(s);
    }
    // The engine's own event loop (this build's backend), without deadlines: what is measured
    // is the path every read of the client takes.
    EventLoop loop(0);
    for (int i = 0; i < connections; ++i) {
        if (const int err = loop.add(readers[i], kIoIn, static_cast<uint64_t>(i))) {
            errno = err;
            fail("watching a reader");
        }
    }

    ReadFloor out;
    std::atomic<bool> done{false};
    std::atomic<uint64_t> messages{0};
    const int64_t t0 = now_ns() + 10'000'000;
    std::thread pacer([&] {
        // Busy-waits to each due instant: the pacer's precision is not what is measured, and
        // sleeping would add its own wake-ups to the machine's load.
        const std::string msg(message_bytes, 'x');
        for (int64_t k = 0;; ++k) {
            for (int i = 0; i < connections; ++i) {
                const int64_t due = t0 + k * gap_ns + i * gap_ns / connections;
                if (due - t0 >= duration_ns) {
                    done.store(true);
                    loop.wake();
                    return;
                }
                while (now_ns() < due) {
                }
                // A failed send (none is expected: blocking, on loopback) is simply not counted.
                if (send_nosignal(writers[i], msg.data(), msg.size()) > 0)
                    messages.fetch_add(1, std::memory_order_relaxed);
            }
        }
    });
    std::vector<char> buf(64 * 1024);
    std::vector<IoEvent> ready;
    std::vector<Deadline> due;
    const int64_t cpu0 = thread_cpu_ns();
    std::string wait_error;
    while (!done.load(std::memory_order_relaxed)) {
        try {
            loop.wait(ready, due);  // (the pacer's wake() ends the last one)
        } catch (const std::exception& e) {
            wait_error = e.what();
            break;
        }
        ++out.wakeups;
        for (const IoEvent& ev : ready) {
            if (ev.tag == EventLoop::kWakeTag) {
                loop.drain_wake();
                continue;
            }
            // <= 0 is EAGAIN (the data went with an earlier read): not a read that returned data.
            if (::recv(readers[ev.tag], buf.data(), buf.size(), 0) > 0) ++out.reads;
        }
    }
    out.reader_cpu_ns = thread_cpu_ns() - cpu0;
    pacer.join();  // (it ends by itself after duration_ns)
    if (!wait_error.empty()) throw std::runtime_error("measure_read_floor: " + wait_error);
    out.messages = messages.load();
    out.duration_ns = duration_ns;
    return out;
}

}  // namespace pytps
