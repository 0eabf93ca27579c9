#include "core/clock.hpp"

#include <algorithm>
#include <limits>

namespace pytps {

ClockInfo clock_info(int calls) {
    ClockInfo info{"CLOCK_MONOTONIC", 0, 0.0, 0};
    timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
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

}  // namespace pytps
