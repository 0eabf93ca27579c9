#include <string>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/http_stream_recorder.hpp"

namespace pytps_bindings {
namespace {

using pytps::HttpStreamRecorder;
using pytps::StreamRecorder;


// Header values are bytes on the wire; latin-1 maps each byte to one code point, so any
// value round-trips (as in http.client and WSGI).
py::str latin1(const std::string& s) {
    PyObject* o = PyUnicode_DecodeLatin1(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

}  // namespace

// Every read-out a finished response's record takes, in one call (pytps.transport.http1.
// fill_from_http): an attribute and a header at a time were ~14 calls, ~3 us of a short
// request's client CPU (issue 42).
py::tuple http_readout(const HttpStreamRecorder& r, const py::tuple& request_id_headers) {
    const auto& p = r.parser();
    const bool headers_done = p.headers_done();
    auto header_or_none = [&](const char* name, bool when) -> py::object {
        const std::string* v = when ? p.header(name) : nullptr;
        return v ? py::object(latin1(*v)) : py::object(py::none());
    };
    py::object request_id = py::none();
    for (const auto& name : request_id_headers) {
        const std::string* v = headers_done ? p.header(name.cast<std::string>()) : nullptr;
        if (v && !v->empty()) {
            request_id = latin1(*v);
            break;
        }
    }
    return py::make_tuple(
        r.t_headers_ns() == HttpStreamRecorder::kNoTime ? py::object(py::none()) : py::object(py::int_(r.t_headers_ns())),
        p.status() == 0 ? py::object(py::none()) : py::object(py::int_(p.status())), headers_done, request_id,
        header_or_none("content-encoding", headers_done), header_or_none("content-type", true),
        p.failed() ? py::object(py::str(p.error())) : py::object(py::none()), p.closed_early(),
        py::bytes(r.error_body()), py::bytes(r.body_start()), recorder_readout(r.recorder()), recorder_error(r.recorder()));
}

void register_http(py::module_& m) {
    py::class_<HttpStreamRecorder>(
        m, "HttpStreamRecorder",
        "HttpStreamRecorder(dialect, max_header_bytes=65536)\n\n"
        "One HTTP/1.x response read straight off the socket: an incremental response parser\n"
        "(status line, headers, chunked / Content-Length / close-delimited body, 1xx skipped)\n"
        "feeding a StreamRecorder. A 2xx body is recorded; any other status keeps the first\n"
        "4 KiB of its body as error_body. One call per socket read; no Python object per call.")
        .def(py::init([](const std::string& dialect, long long max_header_bytes) {
                 pytps::Dialect d;
                 if (!pytps::parse_dialect(dialect, d))
                     throw py::value_error("unknown dialect '" + dialect + "'; use one of: " + pytps::dialect_list());
                 if (max_header_bytes < 1)
                     throw py::value_error("max_header_bytes must be >= 1, got " + std::to_string(max_header_bytes));
                 return new HttpStreamRecorder(d, static_cast<size_t>(max_header_bytes));
             }),
             py::arg("dialect"), py::arg("max_header_bytes") = 65536)
        .def(
            "feed",
            [](HttpStreamRecorder& self, py::handle data, int64_t t_ns) {
                if (self.recorder().closed())
                    throw py::value_error("feed() after close() or finish_eof(): call reset() for a new response");
                BytesArg bytes(data);
                return self.feed(bytes.data(), bytes.size(), t_ns);
            },
            py::arg("data"), py::arg("t_ns"),
            "feed(data, t_ns) -> int\n\n"
            "Consume one socket read (bytes, bytearray or memoryview, split anywhere) made at t_ns\n"
            "(CLOCK_MONOTONIC ns). Returns the bytes consumed: len(data), unless the response ended\n"
            "inside data (the rest is not part of it) or a framing error was found (the offset of the\n"
            "bad byte; see error). So a short count means: check message_done / error. Once done or\n"
            "failed, feed() consumes nothing. Raises ValueError after close() or finish_eof().")
        .def("finish_eof", &HttpStreamRecorder::finish_eof, py::arg("t_ns"),
             "finish_eof(t_ns)\n\nThe server closed the connection at t_ns: completes a body delimited by the close;\n"
             "an unfinished response gets error 'connection closed before the end of the response ...'.\n"
             "Also closes the recorder at t_ns.")
        .def("close", &HttpStreamRecorder::close, py::arg("t_ns"),
             "close(t_ns)\n\nEnd of the body at t_ns: closes the recorder (call after message_done, or to give\n"
             "up). Idempotent: only the first close()/finish_eof() counts.")
        .def("reset", &HttpStreamRecorder::reset,
             "reset()\n\nForget everything, ready for the next response on the same (keep-alive) connection.")
        .def_property_readonly(
            "status",
            [](const HttpStreamRecorder& r) -> py::object {
                if (r.parser().status() == 0) return py::none();
                return py::int_(r.parser().status());
            },
            "The final response's status code once its status line is parsed (1xx are skipped), else None.")
        .def_property_readonly(
            "headers",
            [](const HttpStreamRecorder& r) {
                py::list out;
                for (const auto& h : r.parser().headers()) out.append(py::make_tuple(latin1(h.first), latin1(h.second)));
                return out;
            },
            "[(name, value)] in arrival order; names lowercased, values trimmed, decoded as latin-1.")
        .def(
            "header",
            [](const HttpStreamRecorder& r, const std::string& name) -> py::object {
                const std::string* v = r.parser().header(name);
                if (!v) return py::none();
                return latin1(*v);
            },
            py::arg("name"), "header(name) -> str | None\n\nThe first value of a header (name case-insensitive), or None.")
        .def_property_readonly("headers_done", [](const HttpStreamRecorder& r) { return r.parser().headers_done(); },
                               "The final response's headers are complete.")
        .def_property_readonly("message_done", [](const HttpStreamRecorder& r) { return r.parser().message_done(); },
                               "The whole response (body included) has been read.")
        .def_property_readonly("keep_alive", [](const HttpStreamRecorder& r) { return r.parser().keep_alive(); },
                               "The connection may carry another response after this one (HTTP/1.1 without\n"
                               "'Connection: close', HTTP/1.0 with 'keep-alive'; never for a close-delimited\n"
                               "body or after an error). False until headers_done.")
        .def_property_readonly("chunked", [](const HttpStreamRecorder& r) { return r.parser().chunked(); })
        .def_property_readonly(
            "content_length",
            [](const HttpStreamRecorder& r) -> py::object {
                if (r.parser().content_length() < 0) return py::none();
                return py::int_(r.parser().content_length());
            },
            "The Content-Length that frames the body, or None (chunked, close-delimited, none yet).")
        .def_property_readonly("body_bytes", [](const HttpStreamRecorder& r) { return r.parser().body_bytes(); },
                               "Decoded body bytes so far (after de-chunking).")
        .def_property_readonly(
            "t_headers_ns",
            [](const HttpStreamRecorder& r) -> py::object {
                if (r.t_headers_ns() == HttpStreamRecorder::kNoTime) return py::none();
                return py::int_(r.t_headers_ns());
            },
            "t_ns of the read that completed the final response's headers, or None.")
        .def_property_readonly(
            "error",
            [](const HttpStreamRecorder& r) -> py::object {
                if (!r.parser().failed()) return py::none();
                return py::str(r.parser().error());
            },
            "The HTTP framing error (what was wrong), or None. Errors inside the body's events are\n"
            "the recorder's (recorder.error).")
        .def_property_readonly(
            "closed_early", [](const HttpStreamRecorder& r) { return r.parser().closed_early(); },
            "True when `error` is the connection ending before the response did (truncation), False\n"
            "when it is bytes that broke the HTTP framing (or there is no error).")
        .def_property_readonly(
            "error_body", [](const HttpStreamRecorder& r) { return py::bytes(r.error_body()); },
            "The first 4096 bytes of a non-2xx response's (decoded) body; b'' for 2xx.")
        .def_property_readonly(
            "body_start", [](const HttpStreamRecorder& r) { return py::bytes(r.body_start()); },
            "The first 256 bytes of a 2xx response's (decoded) body: what a body that is not a stream began with.")
        .def("readout", &http_readout,
            py::arg("request_id_headers"),
            "readout(request_id_headers) -> tuple\n\n"
            "Every read-out at once, in this order: t_headers_ns, status, headers_done, the first non-empty\n"
            "value of request_id_headers (names, in the order tried) and content-encoding (both None until\n"
            "headers_done), content-type (as header() gives it), error, closed_early, error_body, body_start, recorder.readout(),\n"
            "recorder.error.")
        .def_property_readonly(
            "recorder", [](HttpStreamRecorder& r) -> StreamRecorder& { return r.recorder(); },
            py::return_value_policy::reference_internal,
            "The owned StreamRecorder with the timing read-outs; it keeps this object alive.");
}

}  // namespace pytps_bindings
