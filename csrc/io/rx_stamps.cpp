#include "io/rx_stamps.hpp"

#include <sys/socket.h>

#include <cerrno>

#if defined(__linux__)
#include <ctime>  // before linux/errqueue.h, which uses timespec
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>

#include "io/platform.hpp"
#endif

namespace pytps {

#if defined(__linux__)
namespace {
constexpr int kRxFlags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
}

bool enable_rx_stamps(int fd) {
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &kRxFlags, sizeof kRxFlags) == 0;
}

int switch_on_rx_stamps() {
    const int fd = open_socket(AF_INET, SOCK_DGRAM, false);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    timeval tv{0, 10'000};
    if (!enable_rx_stamps(fd) || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
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

ssize_t read_socket(int fd, char* buf, size_t len, bool kernel_stamps, int64_t* kernel_real_ns) {
    if (!kernel_stamps) return ::recv(fd, buf, len, 0);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(scm_timestamping)) + 64];
    iovec iov{buf, len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, 0);
    if (n <= 0) return n;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING) continue;
        scm_timestamping ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        if (ts.ts[0].tv_sec != 0 || ts.ts[0].tv_nsec != 0)
            *kernel_real_ns = static_cast<int64_t>(ts.ts[0].tv_sec) * 1000000000LL + ts.ts[0].tv_nsec;
    }
    return n;
}

#else  // no SO_TIMESTAMPING: the capability check (pytps/transport/registry.py) says so first

bool enable_rx_stamps(int) {
    errno = ENOTSUP;
    return false;
}

int switch_on_rx_stamps() { return -1; }

ssize_t read_socket(int fd, char* buf, size_t len, bool, int64_t*) { return ::recv(fd, buf, len, 0); }

#endif

}  // namespace pytps
