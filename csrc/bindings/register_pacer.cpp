#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>

#include "bindings/register.hpp"
#include "client/frame_pacer.hpp"

namespace pytps_bindings {

void register_pacer(py::module_& m) {
    using pytps::FramePacer;
    py::class_<FramePacer>(m, "FramePacer",
                           "FramePacer(spin_ns=50000, realtime=False)\n\n"
                           "A sender thread that writes already-encoded bytes to sockets at absolute due instants\n"
                           "(CLOCK_MONOTONIC ns), stamping each write right before its send(); it never needs the GIL.\n"
                           "While a channel is open the pacer is the only writer of its descriptor.")
        .def(py::init([](int64_t spin_ns, bool realtime) {
                 if (spin_ns < 0) throw py::value_error("FramePacer: spin_ns must be >= 0");
                 return std::make_unique<FramePacer>(spin_ns, realtime);
             }),
             py::arg("spin_ns") = 50'000, py::arg("realtime") = false)
        .def_property_readonly("realtime", &FramePacer::realtime,
                               "Whether the thread runs SCHED_FIFO (asked with realtime=True; refused without\n"
                               "root or CAP_SYS_NICE, when it runs as a normal thread).")
        .def(
            "open",
            [](FramePacer& p, int fd) {
                if (fd < 0) throw py::value_error("FramePacer.open: needs a socket's descriptor (>= 0)");
                return p.open(fd);
            },
            py::arg("fd"),
            "open(fd) -> int\n\nA channel writing to fd (a connected non-blocking socket the caller keeps owning).")
        .def(
            "send",
            [](FramePacer& p, uint64_t channel, int64_t due_ns, const py::bytes& data, bool stamped) {
                std::string bytes = data;  // copied with the GIL held; the thread never touches Python
                return p.send(channel, due_ns, std::move(bytes), stamped);
            },
            py::arg("channel"), py::arg("due_ns"), py::arg("data"), py::arg("stamped") = false,
            "send(channel, due_ns, data, stamped=False) -> bool\n\n"
            "Queues data to be written at due_ns (<= now: at once), after the channel's items due no later.\n"
            "False when the channel is closed or a write on it failed.")
        .def(
            "send_frames",
            [](FramePacer& p, uint64_t channel, const std::vector<int64_t>& due_ns, const py::list& data) {
                if (due_ns.size() != data.size())
                    throw py::value_error("FramePacer.send_frames: due_ns and data differ in length");
                std::vector<FramePacer::Frame> frames;
                frames.reserve(due_ns.size());
                int64_t last = due_ns.empty() ? 0 : due_ns.front();
                for (size_t i = 0; i < due_ns.size(); ++i) {
                    if (due_ns[i] < last) throw py::value_error("FramePacer.send_frames: due_ns must not decrease");
                    last = due_ns[i];
                    frames.push_back(FramePacer::Frame{due_ns[i], std::string(data[i].cast<py::bytes>())});
                }
                py::gil_scoped_release release;  // the lock: the thread may be mid-write
                return p.send_stamped(channel, std::move(frames));
            },
            py::arg("channel"), py::arg("due_ns"), py::arg("data"),
            "send_frames(channel, due_ns, data) -> bool\n\n"
            "Queues frames data[i] at due_ns[i] (non-decreasing), all stamped, under one lock; they must be\n"
            "due no earlier than what the channel already holds. False as send().")
        .def(
            "close",
            [](FramePacer& p, uint64_t channel) {
                FramePacer::Closed c;
                {
                    py::gil_scoped_release release;  // waits for a write in progress (microseconds)
                    c = p.close(channel);
                }
                return py::make_tuple(c.sent_ns, c.unsent, c.error);
            },
            py::arg("channel"),
            "close(channel) -> (sent_ns, unsent, errno)\n\n"
            "Ends the channel: its unsent items are dropped, and once this returns no write on its\n"
            "descriptor is under way. sent_ns: the stamped items' write stamps in write order; unsent:\n"
            "items never written; errno: a failed write's (EPIPE, ECONNRESET...), else 0.");
}

}  // namespace pytps_bindings
