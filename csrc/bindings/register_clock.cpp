#include "bindings/register.hpp"
#include "core/clock.hpp"

namespace pytps_bindings {

void register_clock(py::module_& m) {
    m.def("now_ns", &pytps::now_ns,
          "now_ns() -> int\n\n"
          "The monotonic clock in integer nanoseconds: the clock of time.monotonic_ns() (CLOCK_MONOTONIC;\n"
          "CLOCK_UPTIME_RAW on macOS).");
    m.def(
        "clock_info",
        [](int calls) {
            pytps::ClockInfo info;
            {
                py::gil_scoped_release release;
                info = pytps::clock_info(calls);
            }
            py::dict d;
            d["source"] = info.source;
            d["resolution_ns"] = info.resolution_ns;
            d["call_cost_ns"] = info.call_cost_ns;
            d["min_step_ns"] = info.min_step_ns;
            return d;
        },
        py::arg("calls") = 200000,
        "clock_info(calls=200000) -> dict\n\n"
        "The clock's source name, its resolution (clock_getres) in ns, the measured mean cost of one\n"
        "now_ns() call in ns over `calls` back-to-back reads, and the smallest non-zero step seen.");
}

}  // namespace pytps_bindings
