#include <string>

#include "bindings/register.hpp"
#include "core/errors.hpp"

namespace pytps_bindings {

[[noreturn]] void raise_protocol_error(const std::string& message) {
    py::object cls = py::module_::import("pytps.errors").attr("ProtocolError");
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
}

void register_errors(py::module_&) {
    // C++ core errors become the Python classes of pytps.errors.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const pytps::ProtocolError& e) {
            py::object cls = py::module_::import("pytps.errors").attr("ProtocolError");
            PyErr_SetString(cls.ptr(), e.what());
        }
    });
}

}  // namespace pytps_bindings
