// The syscalls and the clock a Connection uses, behind one interface, so that a test can drive
// a Connection with scripted results (bytes, EAGAIN, short writes, resets, EOF) and a scripted
// clock, with no socket at all (tests/cpp/test_connection.cpp).
//
// The stamps are taken inside the calls, right next to the syscall: a read is stamped right
// after recv returns and a write right before send starts. Only the call into the interface
// (one indirect call, before the syscall) is added; nothing sits between a syscall and its stamp.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace pytps {

struct IoResult {
    static constexpr int64_t kNoTime = INT64_MIN;
    ssize_t n = 0;   // as send/recv return it: bytes, 0 (EOF on a read), -1 (err says why)
    int err = 0;     // errno when n < 0
    int64_t t_ns = 0;  // recv: right after it returned; send: right before it started
    int64_t kernel_real_ns = kNoTime;  // recv with kernel stamps: the kernel's (CLOCK_REALTIME)
};

struct OpenResult {
    int fd = -1;                // >= 0: open, connected or connecting
    bool in_progress = false;   // the connect goes on (EINPROGRESS): wait for writability
    int err = 0;                // fd < 0: errno of the step that failed
    const char* step = "";      // fd < 0: "socket", "connect", "setsockopt(TCP_NODELAY)", ...
};

class SocketOps {
public:
    virtual ~SocketOps() = default;
    // A non-blocking TCP socket, set up (TCP_NODELAY; kernel RX stamps when asked) and connecting.
    // On failure nothing is left open.
    virtual OpenResult open(const sockaddr* addr, socklen_t len, bool kernel_stamps) = 0;
    // The outcome of a non-blocking connect (SO_ERROR): 0 once connected, else an errno.
    virtual int connect_error(int fd) = 0;
    virtual IoResult send(int fd, const char* data, size_t len) = 0;
    virtual IoResult recv(int fd, char* buf, size_t len, bool kernel_stamps) = 0;
    virtual void close(int fd) = 0;
    // CLOCK_MONOTONIC ns (core/clock.hpp now_ns() in the real engine).
    virtual int64_t now() = 0;
};

// The real thing: Linux sockets, core/clock.hpp and io/rx_stamps.hpp.
class SystemSocketOps final : public SocketOps {
public:
    OpenResult open(const sockaddr* addr, socklen_t len, bool kernel_stamps) override;
    int connect_error(int fd) override;
    IoResult send(int fd, const char* data, size_t len) override;
    IoResult recv(int fd, char* buf, size_t len, bool kernel_stamps) override;
    void close(int fd) override;
    int64_t now() override;
};

}  // namespace pytps
