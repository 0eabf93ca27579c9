// What differs between POSIX systems below the event loop, each with one portable path:
// sockets made non-blocking and close-on-exec (SOCK_NONBLOCK/SOCK_CLOEXEC/accept4 on Linux,
// fcntl elsewhere), sends that never raise SIGPIPE (MSG_NOSIGNAL, or SO_NOSIGPIPE on the
// socket), the wake-up descriptor (an eventfd with the epoll backend, a self-pipe with poll),
// and the thread tweaks only Linux has (timer slack) or spells its own way (thread names).
#pragma once
#include <sys/types.h>

#include <cstddef>

namespace pytps {

// socket(domain, type, 0), close-on-exec, non-blocking if asked, and on systems without
// MSG_NOSIGNAL with SO_NOSIGPIPE set. -1 with errno on failure.
int open_socket(int domain, int type, bool nonblock);
// accept() with the same flags; retries EINTR. -1 with errno (EAGAIN when none is waiting).
int accept_socket(int listen_fd, bool nonblock);
// send() that never raises SIGPIPE (a peer that closed gives EPIPE instead).
ssize_t send_nosignal(int fd, const void* data, size_t len);

// Asks the kernel not to defer this thread's timer wake-ups (Linux's timer slack, 50 µs by
// default). Elsewhere nothing: the adaptive spin window covers later wake-ups.
void minimise_timer_slack();
// Names the calling thread (a label for per-thread CPU figures); best effort.
void name_thread(const char* name);

// A descriptor that another thread makes readable to wake a poller: an eventfd where the
// epoll backend is built, else a self-pipe (non-blocking, close-on-exec, both ends).
class Waker {
public:
    Waker();  // throws std::runtime_error naming the failed call
    ~Waker();
    Waker(const Waker&) = delete;
    Waker& operator=(const Waker&) = delete;
    int fd() const { return read_fd_; }  // to watch for readability
    bool signal();                       // false only if the write failed (not when one is already pending)
    void drain();                        // makes fd() unreadable again until the next signal()

private:
    int read_fd_ = -1, write_fd_ = -1;  // the same eventfd twice, or the pipe's two ends
};

}  // namespace pytps
