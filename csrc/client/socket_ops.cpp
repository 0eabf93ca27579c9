#include "client/socket_ops.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>

#include "core/clock.hpp"
#include "io/platform.hpp"
#include "io/rx_stamps.hpp"

namespace pytps {

namespace {
OpenResult failed(int fd, const char* step) {
    OpenResult r;
    r.err = errno;
    r.step = step;
    if (fd >= 0) ::close(fd);
    return r;
}
}  // namespace

OpenResult SystemSocketOps::open(const sockaddr* addr, socklen_t len, bool kernel_stamps) {
    const int fd = open_socket(addr->sa_family, SOCK_STREAM, true);
    if (fd < 0) return failed(-1, "socket");
    // Nagle would hold a request's last segment back, and that delay would be counted as the server's.
    int one = 1;
    if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) return failed(fd, "setsockopt(TCP_NODELAY)");
    // Asked for and refused, the kernel stamps would be missing without a word: say so instead.
    if (kernel_stamps && !enable_rx_stamps(fd)) return failed(fd, "setsockopt(SO_TIMESTAMPING)");
    OpenResult r;
    if (::connect(fd, addr, len) != 0) {
        if (errno != EINPROGRESS) return failed(fd, "connect");
        r.in_progress = true;
    }
    r.fd = fd;
    return r;
}

int SystemSocketOps::connect_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
}

IoResult SystemSocketOps::send(int fd, const char* data, size_t len) {
    IoResult r;
    r.t_ns = now_ns();
    r.n = send_nosignal(fd, data, len);
    if (r.n < 0) r.err = errno;
    return r;
}

IoResult SystemSocketOps::recv(int fd, char* buf, size_t len, bool kernel_stamps) {
    IoResult r;
    r.n = read_socket(fd, buf, len, kernel_stamps, &r.kernel_real_ns);
    r.t_ns = now_ns();  // the read's stamp: nothing between the syscall's return and this
    if (r.n < 0) r.err = errno;
    return r;
}

void SystemSocketOps::close(int fd) { ::close(fd); }

int64_t SystemSocketOps::now() { return now_ns(); }

}  // namespace pytps
