// Monotonic clock: the one time source of pytps. Every timestamp in the project is
// CLOCK_MONOTONIC nanoseconds as int64, the same clock as Python's time.monotonic_ns()
// on Linux, so stamps can be set beside other processes' logs on the same host.
#pragma once
#include <cstdint>
#include <ctime>

namespace pytps {

inline int64_t now_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

struct ClockInfo {
    const char* source;       // "CLOCK_MONOTONIC"
    int64_t resolution_ns;    // clock_getres
    double call_cost_ns;      // measured mean cost of one now_ns() call
    int64_t min_step_ns;      // smallest non-zero difference seen between consecutive calls
};

// Measures the clock: resolution from clock_getres, cost from `calls` back-to-back reads.
ClockInfo clock_info(int calls = 200000);

}  // namespace pytps
