// JSON text on the per-request path (issue 42). json_line, the journal's line writer: one
// request's fields as the text json.dumps(_jsonable(fields), separators=(",", ":")) gives,
// written in one pass over the values instead of a Python walk that copies them for orjson (a
// tenth of a short request's client CPU).
//
// The same bytes as the standard library's C encoder, value for value:
// - a float as float.__repr__ (its shortest digits by std::to_chars, laid out as 'r' mode lays
//   them out, the ".0" kept), NaN and the infinities as null (what
//   pytps.results.folder._jsonable makes of them);
// - an int as int.__repr__, whatever its size; True, False, None as true, false, null;
// - a str as json's ensure_ascii escaping: printable ASCII as it is but '"' and '\\', the five
//   short escapes (\b \f \n \r \t), every other code point as lowercase \uXXXX (a surrogate pair
//   past the BMP; a lone surrogate as itself);
// - dict (str keys, in order), list and tuple nested.
// Anything else (numpy scalars, subclasses, other keys, nesting past kMaxDepth) makes it return
// None, and the caller takes the Python encoders, which decide exactly as before.
// json_body writes a request's body the same way with json.dumps's default separators.
// json_no_big_float checks a value orjson read: no float of 2**63 or more in size (what may have
// been an integer beyond 64 bits in the text, which json.loads reads exactly).
#include <Python.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/embedding_vectors.hpp"

namespace pytps_bindings {
namespace {

constexpr int kMaxDepth = 64;
constexpr char kHex[] = "0123456789abcdef";

// The text being written: a growing buffer whose appends are inlined here (std::string's
// push_back and append are calls into the shared libstdc++, which were a fifth of a journal
// line's time, issue 42).
class Text {
public:
    explicit Text(size_t expected) : buf_(expected == 0 ? 64 : expected, '\0') {}
    void push_back(char c) {
        if (size_ == buf_.size()) grow(1);
        buf_[size_++] = c;
    }
    void append(const char* text, size_t n) {
        if (n > buf_.size() - size_) grow(n);
        std::memcpy(&buf_[size_], text, n);
        size_ += n;
    }
    void append(const char* text) { append(text, std::strlen(text)); }
    void append(const std::string& text) { append(text.data(), text.size()); }
    void append(size_t n, char c) {
        if (n > buf_.size() - size_) grow(n);
        std::memset(&buf_[size_], c, n);
        size_ += n;
    }
    const char* data() const { return buf_.data(); }
    size_t size() const { return size_; }

private:
    void grow(size_t n) { buf_.resize(std::max(2 * buf_.size(), size_ + n)); }
    std::string buf_;
    size_t size_ = 0;
};

// A literal appended with its length known when compiled (append(const char*) measures it with
// strlen at every call: a seventh of a journal line's time, issue 42).
template <size_t N>
void put(Text& out, const char (&text)[N]) {
    out.append(text, N - 1);
}

// ',' or ':' of the compact style, followed by a space in json.dumps's default one.
void put_separator(Text& out, bool spaced, char c) {
    out.push_back(c);
    if (spaced) out.push_back(' ');
}

void put_u(Text& out, unsigned c) {
    const char esc[6] = {'\\', 'u', kHex[(c >> 12) & 15], kHex[(c >> 8) & 15], kHex[(c >> 4) & 15], kHex[c & 15]};
    out.append(esc, sizeof esc);
}

// float.__repr__(x) of a finite x: the shortest digits that read back as x (std::to_chars, as
// Python's dtoa mode 0 gives them), laid out as Python lays them out ('r' mode, ".0" kept):
// fixed notation for a decimal point at -4 < decpt <= 16, else d.ddde+XX with at least two
// exponent digits. About ten times faster than PyOS_double_to_string, which was most of a line.
// Floating-point std::to_chars: libstdc++ and MSVC announce it; libc++ has it since LLVM 14 without
// announcing it, but on Apple systems only from macOS 13.3 (availability-marked): Python's own there.
#if defined(__cpp_lib_to_chars) || (defined(_LIBCPP_VERSION) && _LIBCPP_VERSION >= 14000 && !defined(__APPLE__))
#define PYTPS_FLOAT_TO_CHARS 1
#endif

void put_float_repr(Text& out, double x) {
#if !defined(PYTPS_FLOAT_TO_CHARS)
    // A standard library without floating-point to_chars: Python's own.
    char* text = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    if (text == nullptr) throw py::error_already_set();
    out.append(text);
    PyMem_Free(text);
#else
    char buf[64];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    // buf: [-]d[.ddd]e(+|-)XX
    const char* p = buf;
    if (*p == '-') {
        out.push_back('-');
        ++p;
    }
    char digits[32];
    int n = 0;
    while (p < r.ptr && *p != 'e') {
        if (*p != '.') digits[n++] = *p;
        ++p;
    }
    int exp10 = 0;
    bool negative_exp = false;
    if (p < r.ptr) {  // 'e'
        ++p;
        if (*p == '+' || *p == '-') negative_exp = *p++ == '-';
        while (p < r.ptr) exp10 = exp10 * 10 + (*p++ - '0');
    }
    if (negative_exp) exp10 = -exp10;
    const int decpt = exp10 + 1;  // value = 0.d1d2...dn * 10^decpt
    if (decpt <= -4 || decpt > 16) {
        out.push_back(digits[0]);
        if (n > 1) {
            out.push_back('.');
            out.append(digits + 1, static_cast<size_t>(n - 1));
        }
        out.push_back('e');
        out.push_back(exp10 < 0 ? '-' : '+');
        const int e = exp10 < 0 ? -exp10 : exp10;
        if (e < 10) out.push_back('0');
        out.append(std::to_string(e));
    } else if (decpt <= 0) {
        put(out, "0.");
        out.append(static_cast<size_t>(-decpt), '0');
        out.append(digits, static_cast<size_t>(n));
    } else if (decpt >= n) {
        out.append(digits, static_cast<size_t>(n));
        out.append(static_cast<size_t>(decpt - n), '0');
        put(out, ".0");
    } else {
        out.append(digits, static_cast<size_t>(decpt));
        out.push_back('.');
        out.append(digits + decpt, static_cast<size_t>(n - decpt));
    }
#endif
}

bool plain_char(Py_UCS4 c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

// A character json.dumps escapes (ensure_ascii): the short escapes, else \uXXXX (a surrogate
// pair past the BMP).
void put_escaped(Text& out, Py_UCS4 c) {
    switch (c) {
        case '"': put(out, "\\\""); break;
        case '\\': put(out, "\\\\"); break;
        case '\b': put(out, "\\b"); break;
        case '\f': put(out, "\\f"); break;
        case '\n': put(out, "\\n"); break;
        case '\r': put(out, "\\r"); break;
        case '\t': put(out, "\\t"); break;
        default:
            if (c >= 0x10000) {
                const unsigned v = static_cast<unsigned>(c) - 0x10000;
                put_u(out, 0xd800 | ((v >> 10) & 0x3ff));
                put_u(out, 0xdc00 | (v & 0x3ff));
            } else {
                put_u(out, static_cast<unsigned>(c));
            }
    }
}

// false: the string is not ready (a legacy string on Python < 3.12): the caller falls back.
bool put_str(Text& out, PyObject* s) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) != 0) {
        PyErr_Clear();
        return false;
    }
#endif
    const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const int kind = PyUnicode_KIND(s);
    const void* data = PyUnicode_DATA(s);
    out.push_back('"');
    if (kind == PyUnicode_1BYTE_KIND) {
        // Runs of characters written as they are (a journal's keys and most of its text) are
        // appended whole, not a character at a time (issue 42: about half of a line's time).
        const auto* bytes = static_cast<const unsigned char*>(data);
        Py_ssize_t i = 0;
        while (i < n) {
            Py_ssize_t j = i;
            while (j < n && plain_char(bytes[j])) ++j;
            out.append(reinterpret_cast<const char*>(bytes + i), static_cast<size_t>(j - i));
            if (j < n) put_escaped(out, bytes[j++]);
            i = j;
        }
    } else {
        for (Py_ssize_t i = 0; i < n; ++i) {
            const Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (plain_char(c))
                out.push_back(static_cast<char>(c));
            else
                put_escaped(out, c);
        }
    }
    out.push_back('"');
    return true;
}

// How a value is written: the journal's compact line (NaN and the infinities as null), or a
// request body as json.dumps(value) writes it by default (", " and ": "; a non-finite float,
// which json.dumps writes as NaN or Infinity, is left to it).
struct Style {
    bool spaced;
};

bool put_value(Text& out, PyObject* v, int depth, Style style);

// A dict's members, each after a separator but the first (`first`, cleared by the first one), as
// put_value writes them between its braces.
bool put_members(Text& out, PyObject* dict, int depth, Style style, bool& first) {
    Py_ssize_t pos = 0;
    PyObject* key = nullptr;
    PyObject* item = nullptr;
    while (PyDict_Next(dict, &pos, &key, &item)) {
        if (!PyUnicode_CheckExact(key)) return false;
        if (!first) put_separator(out, style.spaced, ',');
        first = false;
        if (!put_str(out, key)) return false;
        put_separator(out, style.spaced, ':');
        // Borrowed references: no Python code runs while the dict is walked, so it cannot change.
        if (!put_value(out, item, depth + 1, style)) return false;
    }
    return true;
}

// false: a value the Python encoders must decide (no Python error is left set), or a Python
// error (set: the caller raises it).
bool put_value(Text& out, PyObject* v, int depth, Style style) {
    if (v == Py_None) {
        put(out, "null");
        return true;
    }
    if (v == Py_True) {
        put(out, "true");
        return true;
    }
    if (v == Py_False) {
        put(out, "false");
        return true;
    }
    if (PyUnicode_CheckExact(v)) return put_str(out, v);
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow == 0) {
            if (x == -1 && PyErr_Occurred()) return false;
            char digits[24];
            const std::to_chars_result r = std::to_chars(digits, digits + sizeof digits, x);
            out.append(digits, static_cast<size_t>(r.ptr - digits));
            return true;
        }
        PyObject* text = PyObject_Repr(v);
        if (text == nullptr) return false;
        Py_ssize_t size = 0;
        const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
        if (utf8 != nullptr) out.append(utf8, static_cast<size_t>(size));
        Py_DECREF(text);
        return utf8 != nullptr;
    }
    if (PyFloat_CheckExact(v)) {
        const double x = PyFloat_AS_DOUBLE(v);
        if (!std::isfinite(x)) {
            if (style.spaced) return false;
            put(out, "null");
            return true;
        }
        put_float_repr(out, x);
        return true;
    }
    if (depth >= kMaxDepth) return false;
    if (PyDict_CheckExact(v)) {
        out.push_back('{');
        bool first = true;
        if (!put_members(out, v, depth, style, first)) return false;
        out.push_back('}');
        return true;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        const bool list = PyList_CheckExact(v);
        const Py_ssize_t n = list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
        out.push_back('[');
        for (Py_ssize_t i = 0; i < n; ++i) {
            if (i) put_separator(out, style.spaced, ',');
            if (!put_value(out, list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i), depth + 1, style))
                return false;
        }
        out.push_back(']');
        return true;
    }
    return false;
}

// A value orjson read holds no float as large as 2**63 (nor a NaN): dict values and list items
// walked, every other kind passes. false past kMaxDepth (the caller then reads it again).
bool no_big_float(PyObject* v, int depth) {
    if (PyFloat_CheckExact(v)) {
        constexpr double kBig = 9223372036854775808.0;  // 2**63
        const double x = PyFloat_AS_DOUBLE(v);
        return -kBig < x && x < kBig;
    }
    if (depth >= kMaxDepth) return !(PyDict_CheckExact(v) || PyList_CheckExact(v));
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject* key = nullptr;
        PyObject* item = nullptr;
        while (PyDict_Next(v, &pos, &key, &item))
            if (!no_big_float(item, depth + 1)) return false;
        return true;
    }
    if (PyList_CheckExact(v)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); ++i)
            if (!no_big_float(PyList_GET_ITEM(v, i), depth + 1)) return false;
    }
    return true;
}

// The JSON text of a plain value into `out`: false when the value is not plain, and the caller
// returns None for its Python encoders to take it; a Python error met on the way is raised.
bool plain_json(py::handle value, Style style, Text& out) {
    if (put_value(out, value.ptr(), 0, style)) return true;
    if (PyErr_Occurred()) throw py::error_already_set();
    return false;
}

}  // namespace

// An embedding read as a list: its length when every component is an exact float, -1 when one of
// them is NaN or infinite, None when it is empty or holds anything but floats (then the Python
// checks decide).
py::object float_vector_length(py::handle value) {
    PyObject* v = value.ptr();
    if (!PyList_CheckExact(v) || PyList_GET_SIZE(v) == 0) return py::none();
    const Py_ssize_t n = PyList_GET_SIZE(v);
    bool finite = true;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* x = PyList_GET_ITEM(v, i);
        if (!PyFloat_CheckExact(x)) return py::none();
        finite = finite && std::isfinite(PyFloat_AS_DOUBLE(x));
    }
    return py::int_(finite ? n : -1);
}

void register_jsontext(py::module_& m) {
    m.def(
        "json_line",
        [](py::handle fields) -> py::object {
            Text out(2048);
            if (!plain_json(fields, Style{false}, out)) return py::none();
            PyObject* text = PyUnicode_DecodeASCII(out.data(), static_cast<Py_ssize_t>(out.size()), nullptr);
            if (text == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(text);
        },
        py::arg("value"),
        "json_line(value) -> str | None\n\n"
        "json.dumps(value, separators=(',', ':')) with NaN and the infinities written as null, for\n"
        "values made of dict (str keys), list, tuple, str, int, float, bool and None; None for\n"
        "anything else (numpy scalars, subclasses, other keys, nesting deeper than 64): the\n"
        "journal's line writer (pytps.results.folder.line_text) then takes the Python encoders.");
    m.def(
        "json_line_of",
        [](py::handle fields, py::tuple names, py::tuple values) -> py::object {
            PyObject* d = fields.ptr();
            if (!PyDict_CheckExact(d) || names.size() != values.size()) return py::none();
            Text out(2048);
            out.push_back('{');
            bool first = true;
            if (!put_members(out, d, 0, Style{false}, first)) {
                if (PyErr_Occurred()) throw py::error_already_set();
                return py::none();
            }
            for (size_t i = 0; i < names.size(); ++i) {
                PyObject* name = PyTuple_GET_ITEM(names.ptr(), static_cast<Py_ssize_t>(i));
                if (!PyUnicode_CheckExact(name)) return py::none();
                // {**fields, name: value} keeps a key fields has at its place: the dict's way.
                const int has = PyDict_Contains(d, name);
                if (has != 0) {
                    if (has < 0) throw py::error_already_set();
                    return py::none();
                }
                if (!first) out.push_back(',');
                first = false;
                if (!put_str(out, name)) return py::none();
                out.push_back(':');
                if (!put_value(out, PyTuple_GET_ITEM(values.ptr(), static_cast<Py_ssize_t>(i)), 1, Style{false})) {
                    if (PyErr_Occurred()) throw py::error_already_set();
                    return py::none();
                }
            }
            out.push_back('}');
            out.push_back('\n');
            // Bytes: the journal is written as bytes, so the line is made into no str (issue 42).
            return py::bytes(out.data(), out.size());
        },
        py::arg("fields"), py::arg("names"), py::arg("values"),
        "json_line_of(fields, names, values) -> bytes | None\n\n"
        "json_line({**fields, **dict(zip(names, values))}) and a newline, ASCII-encoded, without the merged dict: None\n"
        "where json_line gives None, when a name is a key of fields, or names and values differ in length.");
    m.def(
        "json_body",
        [](py::handle value) -> py::object {
            Text out(1024);
            if (!plain_json(value, Style{true}, out)) return py::none();
            return py::bytes(out.data(), out.size());
        },
        py::arg("value"),
        "json_body(value) -> bytes | None\n\n"
        "json.dumps(value).encode() (its default separators), for values made of dict (str keys),\n"
        "list, tuple, str, int, finite float, bool and None; None for anything else (NaN and the\n"
        "infinities included): a request's body (pytps.measure.fast_json.dumps_body).");
    m.def(
        "json_no_big_float", [](py::handle value) { return no_big_float(value.ptr(), 0); }, py::arg("value"),
        "json_no_big_float(value) -> bool\n\n"
        "True when no float in value (dict values and list items, walked) is 2**63 or more in size, or\n"
        "NaN: what orjson read is then what json.loads reads (pytps.measure.fast_json.loads). False\n"
        "also for nesting deeper than 64.");
    m.def(
        "json_empty_float_vectors",
        [](py::handle body) -> py::object {
            std::string out;
            std::vector<pytps::CountedVector> counted;
            {
                const BytesArg bytes(body);
                if (!pytps::empty_float_vectors(std::string_view(bytes.data(), bytes.size()), out, counted))
                    return py::none();
            }
            py::dict lengths;
            for (const auto& v : counted) lengths[py::int_(v.element)] = py::int_(v.components);
            return py::make_tuple(py::bytes(out.data(), out.size()), lengths);
        },
        py::arg("body"),
        "json_empty_float_vectors(body) -> tuple[bytes, dict[int, int]] | None\n\n"
        "An OpenAI-style embeddings body with each data[i].embedding that is a non-empty array of\n"
        "finite float literals emptied to [], and {i: its components} (core/embedding_vectors.hpp);\n"
        "None when the body is not strict JSON of that shape or has no such vector.");
    m.def("json_float_vector_length", &float_vector_length, py::arg("value"),
          "json_float_vector_length(value) -> int | None\n\n"
          "An embedding's components when value is a non-empty list of floats only: its length, or -1\n"
          "when one is NaN or infinite; None for anything else (pytps.measure.bodies then decides).");
}

}  // namespace pytps_bindings
