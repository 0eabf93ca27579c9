#include "io/platform.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "io/backend.hpp"

#if defined(__linux__)
#include <sys/prctl.h>
#endif
#if !PYTPS_EVENT_BACKEND_POLL
#include <sys/eventfd.h>
#endif

namespace pytps {

namespace {

// fcntl's way, for systems without SOCK_NONBLOCK/SOCK_CLOEXEC (and for the pipe).
bool set_flags(int fd, bool nonblock) {
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return false;
    if (!nonblock) return true;
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

[[maybe_unused]] int finish(int fd, bool nonblock) {
#if !defined(MSG_NOSIGNAL) && defined(SO_NOSIGPIPE)
    int one = 1;
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
#endif
    if (fd >= 0 && !set_flags(fd, nonblock)) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

}  // namespace

int open_socket(int domain, int type, bool nonblock) {
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC)
    return ::socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
#else
    return finish(::socket(domain, type, 0), nonblock);
#endif
}

int accept_socket(int listen_fd, bool nonblock) {
    int fd;
    do {
#if defined(__linux__)
        fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0));
#else
        fd = finish(::accept(listen_fd, nullptr, nullptr), nonblock);
#endif
    } while (fd < 0 && errno == EINTR);
    return fd;
}

ssize_t send_nosignal(int fd, const void* data, size_t len) {
#if defined(MSG_NOSIGNAL)
    return ::send(fd, data, len, MSG_NOSIGNAL);
#else
    return ::send(fd, data, len, 0);  // SO_NOSIGPIPE is set on the socket (finish())
#endif
}

void minimise_timer_slack() {
#if defined(__linux__)
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}

void name_thread(const char* name) {
#if defined(__APPLE__)
    (void)pthread_setname_np(name);
#elif defined(__linux__)
    (void)pthread_setname_np(pthread_self(), name);
#else
    (void)name;
#endif
}

Waker::Waker() {
#if !PYTPS_EVENT_BACKEND_POLL
    read_fd_ = write_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (read_fd_ < 0) throw std::runtime_error(std::string("eventfd failed: ") + std::strerror(errno));
#else
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    read_fd_ = p[0];
    write_fd_ = p[1];
    if (!set_flags(read_fd_, true) || !set_flags(write_fd_, true)) {
        const int e = errno;
        ::close(read_fd_);
        ::close(write_fd_);
        throw std::runtime_error(std::string("fcntl on the wake-up pipe failed: ") + std::strerror(e));
    }
#endif
}

Waker::~Waker() {
    if (write_fd_ >= 0 && write_fd_ != read_fd_) ::close(write_fd_);
    if (read_fd_ >= 0) ::close(read_fd_);
}

bool Waker::signal() {
    // Non-blocking, so no EINTR. EAGAIN (an eventfd counter about to overflow, a full pipe)
    // means a wake-up is already pending: a success.
    const uint64_t one = 1;
#if !PYTPS_EVENT_BACKEND_POLL
    const ssize_t r = ::write(write_fd_, &one, sizeof one);
#else
    const ssize_t r = ::write(write_fd_, &one, 1);
#endif
    return r > 0 || errno == EAGAIN;
}

void Waker::drain() {
    // An eventfd is reset by one read; a pipe holds one byte per signal() not yet drained.
    // Either read fails with EAGAIN once there is nothing left.
    uint64_t buf[16];
#if !PYTPS_EVENT_BACKEND_POLL
    const ssize_t r = ::read(read_fd_, buf, sizeof buf[0]);
    (void)r;
#else
    while (::read(read_fd_, buf, sizeof buf) > 0) {
    }
#endif
}

}  // namespace pytps
