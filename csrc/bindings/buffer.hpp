// Borrowing the bytes of a bytes, bytearray or memoryview (any C-contiguous buffer)
// without copying: the hot feed() calls start here.
#pragma once
#include <pybind11/pybind11.h>

#include <string_view>

namespace pytps_bindings {
namespace py = pybind11;

class BytesArg {
public:
    explicit BytesArg(py::handle obj) {
        PyObject* o = obj.ptr();
        if (PyBytes_Check(o)) {
            view_ = std::string_view(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
        } else if (PyByteArray_Check(o)) {
            view_ = std::string_view(PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o)));
        } else if (PyObject_CheckBuffer(o)) {
            if (PyObject_GetBuffer(o, &buf_, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
            held_ = true;
            view_ = std::string_view(static_cast<const char*>(buf_.buf), static_cast<size_t>(buf_.len));
        } else {
            throw py::type_error(std::string("expected bytes, bytearray or memoryview, got ") +
                                 Py_TYPE(o)->tp_name);
        }
    }
    ~BytesArg() {
        if (held_) PyBuffer_Release(&buf_);
    }
    BytesArg(const BytesArg&) = delete;
    BytesArg& operator=(const BytesArg&) = delete;

    const char* data() const { return view_.data(); }
    size_t size() const { return view_.size(); }

private:
    std::string_view view_;
    Py_buffer buf_{};
    bool held_ = false;
};

// Text from stream bytes: invalid UTF-8 becomes U+FFFD per maximal subpart.
inline py::str decode_text(std::string_view bytes) {
    PyObject* s = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace");
    if (!s) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(s);
}

}  // namespace pytps_bindings
