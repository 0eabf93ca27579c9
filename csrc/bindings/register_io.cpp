#include <pybind11/stl.h>

#include <exception>
#include <thread>
#include <vector>

#include "bindings/register.hpp"
#include "core/clock.hpp"
#include "io/event_loop.hpp"
#include "io/platform.hpp"
#include "io/rx_stamps.hpp"

namespace pytps_bindings {

namespace {

struct Probe {
    const char* wait = nullptr;
    uint64_t sleeps = 0, polls = 0, spins = 0;
    int64_t spin_window_ns = 0;
    std::vector<int64_t> late_ns;
};

// n deadlines, each wait_ns after the previous one was met, on a fresh loop.
void run_probe(Probe& p, int64_t wait_ns, int n, int64_t spin_ns) {
    // As the emulator's thread does. Harmless if refused: sleeps may then end up to 50 µs
    // late, which the spin covers.
    pytps::minimise_timer_slack();
    pytps::EventLoop el(spin_ns);
    std::vector<pytps::IoEvent> ready;
    std::vector<pytps::Deadline> due;
    p.late_ns.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        const int64_t at = pytps::now_ns() + wait_ns;
        el.schedule(at, 1, static_cast<uint64_t>(i));
        do {
            el.wait(ready, due);
        } while (due.empty());
        p.late_ns[static_cast<size_t>(i)] = pytps::now_ns() - at;
    }
    p.wait = el.wait_kind();
    p.sleeps = el.sleeps();
    p.polls = el.polls();
    p.spins = el.spins();
    p.spin_window_ns = el.spin_window_ns();
}

}  // namespace

void register_io(py::module_& m) {
    // Which backend the event loops (client engine, emulator, read floor) have and which kernel
    // wait they sleep in, so that tests, CI and `pytps clock` can say which path they checked.
    m.attr("EVENT_BACKEND") = pytps::event_backend();
    m.attr("EVENT_WAIT") = pytps::event_wait_kind();
    m.attr("KERNEL_TIMESTAMPS") = pytps::kHaveRxStamps;
    m.def(
        "_event_loop_probe",
        [](int64_t wait_ns, int n, int64_t spin_ns) {
            if (wait_ns < 0 || n < 1) throw py::value_error("_event_loop_probe: needs wait_ns >= 0 and n >= 1");
            Probe p;
            std::exception_ptr error;
            {
                py::gil_scoped_release release;
                // A thread of its own, as the engine's and the emulator's loops have, so that the
                // timer slack stays off the caller's thread.
                std::thread t([&] {
                    try {
                        run_probe(p, wait_ns, n, spin_ns);
                    } catch (...) {
                        error = std::current_exception();
                    }
                });
                t.join();
            }
            if (error) std::rethrow_exception(error);
            py::dict d;
            d["wait"] = p.wait;
            d["deadlines"] = n;
            d["sleeps"] = p.sleeps;
            d["polls"] = p.polls;
            d["spins"] = p.spins;
            d["spin_window_ns"] = p.spin_window_ns;
            d["late_ns"] = p.late_ns;
            return d;
        },
        py::arg("wait_ns"), py::arg("n"), py::arg("spin_ns") = 60'000,
        "_event_loop_probe(wait_ns, n, spin_ns=60000) -> dict\n\n"
        "Test hook: an EventLoop on a new thread waits n times for a deadline wait_ns ahead. Returns\n"
        "{'wait': the kernel wait used, 'deadlines': n, 'sleeps': kernel waits with a timeout, 'polls':\n"
        "every wait syscall, 'spins', 'spin_window_ns', 'late_ns': [lateness of each deadline]}.");
}

}  // namespace pytps_bindings
