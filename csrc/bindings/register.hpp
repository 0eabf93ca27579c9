// One register_* per concept, called from module.cpp (boost-histogram style).
#pragma once
#include <pybind11/pybind11.h>

namespace pytps {
class StreamRecorder;
class HttpStreamRecorder;
}

namespace pytps_bindings {
namespace py = pybind11;

void register_errors(py::module_& m);
void register_clock(py::module_& m);
void register_sse(py::module_& m);
void register_recorder(py::module_& m);
void register_histogram(py::module_& m);
void register_emulator(py::module_& m);
void register_http(py::module_& m);
void register_client(py::module_& m);
void register_io(py::module_& m);
void register_pacer(py::module_& m);
void register_jsontext(py::module_& m);
void register_words(py::module_& m);

// A finished StreamRecorder's read-outs, shared by StreamRecorder.readout() and
// HttpStreamRecorder.readout() (register_recorder.cpp): the tuple, and the error as a dict or None.
py::tuple recorder_readout(const pytps::StreamRecorder& r);
py::object recorder_error(const pytps::StreamRecorder& r);
// HttpStreamRecorder.readout(), shared with ClientResult.readout() (register_http.cpp).
py::tuple http_readout(const pytps::HttpStreamRecorder& r, const py::tuple& request_id_headers);

// Raises pytps.errors.ProtocolError (a Python class, so the whole error family lives in one place).
[[noreturn]] void raise_protocol_error(const std::string& message);

}  // namespace pytps_bindings
