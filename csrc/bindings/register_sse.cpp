#include <string>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/sse_parser.hpp"

namespace pytps_bindings {
namespace {

struct SSEEvent {
    py::str event;
    py::str data;
    py::str id;
    py::object retry;  // int or None
};

// Collects events as Python objects (the recorder, not this class, is the per-token hot path).
struct ListSink {
    py::list events;
    std::string error;
    void on_event(const pytps::SSEEventView& ev) {
        SSEEvent e{decode_text(ev.type), decode_text(ev.data), decode_text(ev.id),
                   ev.retry_ms < 0 ? py::object(py::none()) : py::object(py::int_(ev.retry_ms))};
        events.append(py::cast(std::move(e)));
    }
    void on_error(const char* message) {
        if (error.empty()) error = message;
    }
};

}  // namespace

void register_sse(py::module_& m) {
    py::class_<SSEEvent>(m, "SSEEvent", "One dispatched Server-Sent Event (owned strings).")
        .def(py::init([](py::str event, py::str data, py::str id, py::object retry) {
                 return SSEEvent{std::move(event), std::move(data), std::move(id), std::move(retry)};
             }),
             py::arg("event") = "message", py::arg("data") = "", py::arg("id") = "", py::arg("retry") = py::none())
        .def_readonly("event", &SSEEvent::event, "The event type: 'message' unless an event: field set it.")
        .def_readonly("data", &SSEEvent::data, "The data lines joined with '\\n'.")
        .def_readonly("id", &SSEEvent::id, "The last event ID in effect at dispatch ('' if none); it persists across events.")
        .def_readonly("retry", &SSEEvent::retry, "The reconnection time in ms in effect at dispatch, or None if never set.")
        .def("__eq__",
             [](const SSEEvent& a, py::object other) -> py::object {
                 if (!py::isinstance<SSEEvent>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
                 const auto& b = other.cast<const SSEEvent&>();
                 return py::bool_(a.event.equal(b.event) && a.data.equal(b.data) && a.id.equal(b.id) &&
                                  a.retry.equal(b.retry));
             })
        .def("__hash__", [](const SSEEvent& e) { return py::hash(py::make_tuple(e.event, e.data, e.id, e.retry)); })
        .def("__repr__", [](const SSEEvent& e) {
            return "SSEEvent(event=" + py::repr(e.event).cast<std::string>() + ", data=" +
                   py::repr(e.data).cast<std::string>() + ", id=" + py::repr(e.id).cast<std::string>() +
                   ", retry=" + py::repr(e.retry).cast<std::string>() + ")";
        })
        .def("_astuple", [](const SSEEvent& e) { return py::make_tuple(e.event, e.data, e.id, e.retry); });

    py::class_<pytps::SSEParser>(m, "SSEParser",
                                 "Incremental Server-Sent Events parser (WHATWG event-stream rules).\n\n"
                                 "Feed bytes split anywhere; each feed() returns the events completed by that call.")
        .def(py::init([](size_t max_line_bytes) {
                 if (max_line_bytes < 1) throw py::value_error("max_line_bytes must be at least 1");
                 return pytps::SSEParser(max_line_bytes);
             }),
             py::arg("max_line_bytes") = pytps::SSEParser::kDefaultMaxLineBytes)
        .def(
            "feed",
            [](pytps::SSEParser& self, py::handle data) {
                BytesArg bytes(data);
                ListSink sink;
                self.feed(bytes.data(), bytes.size(), sink);
                if (!sink.error.empty()) {
                    // The events completed before the error travel with it, so none are lost.
                    py::object cls = py::module_::import("pytps.errors").attr("ProtocolError");
                    py::object exc = cls(sink.error + " (max_line_bytes=" + std::to_string(self.max_line_bytes()) +
                                         "; raise it if the stream is legitimate)");
                    exc.attr("events") = sink.events;
                    PyErr_SetObject(cls.ptr(), exc.ptr());
                    throw py::error_already_set();
                }
                return sink.events;
            },
            py::arg("data"),
            "feed(data) -> list[SSEEvent]\n\n"
            "Parse bytes, bytearray or memoryview of any size, split anywhere. Returns the events\n"
            "completed by this call. Raises pytps.ProtocolError when a line (or one event's data) is\n"
            "longer than max_line_bytes: that event is discarded, the rest of the input is still\n"
            "parsed, and the exception's .events holds the events this call completed.")
        .def("close", &pytps::SSEParser::close,
             "close() -> bool\n\n"
             "End of stream: True when an incomplete event was discarded (data lines since the last\n"
             "blank line, or an unterminated non-comment line). Resets the parser for a new stream.")
        .def_property_readonly("last_event_id", [](const pytps::SSEParser& p) { return decode_text(p.last_event_id()); },
                               "The last event ID in effect.")
        .def_property_readonly("retry", [](const pytps::SSEParser& p) -> py::object {
                                   if (p.retry_ms() < 0) return py::none();
                                   return py::int_(p.retry_ms());
                               }, "The reconnection time in ms in effect, or None.")
        .def_property_readonly("max_line_bytes", &pytps::SSEParser::max_line_bytes);
}

}  // namespace pytps_bindings
