// Monotonic clock: the one time source of pytps. Every timestamp in the project is
// nanoseconds as int64 on the clock of Python's time.monotonic_ns(), so that native and Python
// stamps compare: CLOCK_MONOTONIC on Linux (and other POSIX systems), CLOCK_UPTIME_RAW
// (mach_absolute_time, ns steps) on macOS, where CLOCK_MONOTONIC only has µs steps and is
// not the clock Python reads. Stamps can be set beside other processes' logs on the same host.
#pragma once
#include <cstdint>
#include <ctime>

namespace pytps {

#if defined(__APPLE__)
constexpr clockid_t kMonotonicClock = CLOCK_UPTIME_RAW;
constexpr const char* kMonotonicClockName = "CLOCK_UPTIME_RAW";
inline int64_t now_ns() noexcept { return static_cast<int64_t>(clock_gettime_nsec_np(CLOCK_UPTIME_RAW)); }
#else
constexpr clockid_t kMonotonicClock = CLOCK_MONOTONIC;
constexpr const char* kMonotonicClockName = "CLOCK_MONOTONIC";
inline int64_t now_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
#endif

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) in ns: what a thread cost, whatever
// else the process does.
inline int64_t thread_cpu_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

struct ClockInfo {
    const char* source;       // kMonotonicClockName
    int64_t resolution_ns;    // clock_getres
    double call_cost_ns;      // measured mean cost of one now_ns() call
    int64_t min_step_ns;      // smallest non-zero difference seen between consecutive calls
};

// Measures the clock: resolution from clock_getres, cost from `calls` back-to-back reads.
ClockInfo clock_info(int calls = 200000);

// CLOCK_REALTIME minus CLOCK_MONOTONIC, for moving a kernel stamp (SO_TIMESTAMPING gives
// realtime) onto the monotonic clock. Measured as the narrowest of a few (mono, real, mono)
// brackets: the offset is taken at the bracket's middle, and half its width is the error
// bound. Realtime is slewed by NTP and may step, so users re-measure it often (each second).
struct RealtimeOffset {
    int64_t offset_ns = 0;       // realtime - monotonic
    int64_t uncertainty_ns = 0;  // half the narrowest bracket
    int64_t measured_at_ns = 0;  // monotonic

    static RealtimeOffset measure(int tries = 5) noexcept;
    int64_t to_monotonic(int64_t realtime_ns) const noexcept { return realtime_ns - offset_ns; }
    // to_monotonic with an offset at most a second old at now_mono_ns (re-measured if older).
    int64_t to_monotonic_fresh(int64_t realtime_ns, int64_t now_mono_ns) noexcept {
        if (now_mono_ns - measured_at_ns > 1'000'000'000) *this = measure();
        return to_monotonic(realtime_ns);
    }
};

}  // namespace pytps
