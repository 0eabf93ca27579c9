// Kernel software receive stamps (SO_TIMESTAMPING, SOF_TIMESTAMPING_RX_SOFTWARE) for TCP
// sockets: switching them on, and reading with them. Shared by the client engine and the
// emulator (whose truth records then say when the kernel had each request). Linux only:
// elsewhere enable_rx_stamps() fails with ENOTSUP and reads are plain recv()s.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace pytps {

// Whether this build can take kernel receive stamps at all (Linux's SO_TIMESTAMPING).
#if defined(__linux__)
constexpr bool kHaveRxStamps = true;
#else
constexpr bool kHaveRxStamps = false;
#endif

// Asks for software RX stamps on fd. False if the kernel refused.
bool enable_rx_stamps(int fd);

// The kernel turns RX stamping on for the first socket that asks from a work queue, a little
// later, so the first packets of a fresh process come without stamps. This opens a UDP socket
// that asks too and sends itself datagrams until one comes back stamped (at most ~200 ms);
// keep it open while stamps are wanted and close it after. -1 if it could not be made.
int switch_on_rx_stamps();

// One recv(), or with kernel_stamps a recvmsg() whose control data carries the kernel's
// software receive stamp (CLOCK_REALTIME ns; for TCP, that of the last segment this read
// took). *kernel_real_ns is left alone when the kernel gave none.
ssize_t read_socket(int fd, char* buf, size_t len, bool kernel_stamps, int64_t* kernel_real_ns);

}  // namespace pytps
