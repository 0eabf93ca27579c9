#include "core/clock.hpp"

#include <algorithm>
#include <limits>

namespace pytps {

ClockInfo clock_info(int calls) {
    ClockInfo info{kMonotonicClockName, 0, 0.0, 0};
    timespec res;
    clock_getres(kMonotonicClock, &res);
    info.resolution_ns = static_cast<int64_t>(res.tv_sec) * 1000000000LL + res.tv_nsec;

    calls = std::max(calls, 2);
    int64_t min_step = std::numeric_limits<int64_t>::max();
    const int64_t start = now_ns();
    int64_t prev = start;
    for (int i = 0; i < calls; ++i) {
        const int64_t t = now_ns();
        const int64_t step = t - prev;
        if (step > 0 && step < min_step) min_step = step;
        prev = t;
    }
    info.call_cost_ns = static_cast<double>(prev - start) / calls;
    info.min_step_ns = min_step == std::numeric_limits<int64_t>::max() ? 0 : min_step;
    return info;
}

RealtimeOffset RealtimeOffset::measure(int tries) noexcept {
    RealtimeOffset best;
    int64_t best_width = std::numeric_limits<int64_t>::max();
    for (int i = 0; i < tries; ++i) {
        const int64_t m0 = now_ns();
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        const int64_t m1 = now_ns();
        const int64_t real = static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
        if (m1 - m0 < best_width) {
            best_width = m1 - m0;
            best.offset_ns = real - (m0 + (m1 - m0) / 2);
            best.uncertainty_ns = (m1 - m0 + 1) / 2;
            best.measured_at_ns = m1;
        }
    }
    return best;
}

}  // namespace pytps
