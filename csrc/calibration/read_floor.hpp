// The floor under any streaming client on this machine: what the kernel charges a reader that
// takes each small message as it arrives (an event-loop wait, a wake-up, a recv), measured with the
// barest such reader, so pytps's own cost per event can be set against it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pytps {

struct ReadFloor {
    uint64_t messages = 0;        // written by the pacing thread
    uint64_t reads = 0;           // recv calls that returned data
    uint64_t wakeups = 0;         // returns from the event loop's wait (this build's backend)
    int64_t reader_cpu_ns = 0;    // CLOCK_THREAD_CPUTIME_ID of the reading thread
    int64_t duration_ns = 0;
};

// Opens `connections` loopback TCP connections; a pacing thread writes `message_bytes` to them in
// turn, spread evenly so that each gets one every gap_ns, for duration_ns; the calling thread
// reads with the event loop (io/event_loop.hpp) + recv. Throws std::runtime_error naming the failing call.
ReadFloor measure_read_floor(int connections, int64_t gap_ns, int64_t duration_ns, size_t message_bytes);

}  // namespace pytps
