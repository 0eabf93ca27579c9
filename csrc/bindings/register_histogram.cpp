#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <sstream>

#include "bindings/register.hpp"
#include "core/histogram.hpp"

namespace pytps_bindings {

namespace {

using pytps::Histogram;

// record_many drops the GIL, so another thread could reach the same histogram meanwhile: every
// method takes this object's mutex (uncontended: one atomic op).
struct PyHistogram {
    Histogram h;
    mutable std::mutex mu;
    explicit PyHistogram(Histogram hist) : h(std::move(hist)) {}
};

using Lock = std::lock_guard<std::mutex>;

// An integer argument as int64; an int beyond int64 is out of any histogram's range, so it gets
// the same ValueError as any other out-of-range value rather than pybind11's TypeError.
int64_t value_arg(py::handle v, const Histogram& h) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow)
        throw py::value_error("Histogram: value " + py::str(index).cast<std::string>() +
                              " is outside the histogram's range [lowest=" +
                              std::to_string(h.lowest()) + ", highest=" +
                              std::to_string(h.highest()) + "]; build the Histogram with a wider range");
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    return static_cast<int64_t>(x);
}

std::string repr(const Histogram& h) {
    std::ostringstream s;
    s.precision(6);
    s << "Histogram(count=" << h.count() << ", min=" << h.min() << ", max=" << h.max()
      << ", mean=" << h.mean() << ", stddev=" << h.stddev() << ", lowest=" << h.lowest()
      << ", highest=" << h.highest() << ", significant_digits=" << h.significant_digits() << ")";
    return s.str();
}

std::unique_ptr<PyHistogram> from_buffer(py::handle b) {
    Py_buffer view;
    if (PyObject_GetBuffer(b.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        throw py::type_error("Histogram.from_bytes expects bytes, bytearray or a contiguous "
                             "memoryview, got " +
                             py::str(py::type::of(b).attr("__name__")).cast<std::string>());
    }
    std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&view, PyBuffer_Release);
    return std::make_unique<PyHistogram>(Histogram::from_bytes(
        static_cast<const uint8_t*>(view.buf), static_cast<size_t>(view.len)));
}

py::bytes to_bytes(const PyHistogram& self) {
    std::string s;
    {
        Lock g(self.mu);
        s = self.h.to_bytes();
    }
    return py::bytes(s);
}

}  // namespace

void register_histogram(py::module_& m) {
    py::class_<PyHistogram>(m, "Histogram",
        "Histogram(lowest=1, highest=3_600_000_000_000, significant_digits=3)\n\n"
        "HdrHistogram-style latency histogram over int64 values (typically ns).\n\n"
        "Values in [lowest, highest] fall into log-linear buckets: each power-of-two range is cut\n"
        "into >= 10**significant_digits equal steps, so a percentile is reported within a relative\n"
        "error of 10**-significant_digits (values below lowest * 10**significant_digits: within an\n"
        "absolute error < lowest). count, min, max, mean and stddev are exact: computed from the\n"
        "recorded values, not from the buckets. Bucket memory is allocated per octave touched\n"
        "(8 KiB each at 3 digits).\n\n"
        "Raises ValueError when lowest < 1, highest < 2*lowest, significant_digits is not in\n"
        "1..5, or lowest * 2 * 10**significant_digits reaches 2**62.\n"
        "Thread-safe (each call holds the histogram's lock); picklable.")
        .def(py::init([](int64_t lowest, int64_t highest, int digits) {
                 return std::make_unique<PyHistogram>(Histogram(lowest, highest, digits));
             }),
             py::arg("lowest") = Histogram::kDefaultLowest,
             py::arg("highest") = Histogram::kDefaultHighest,
             py::arg("significant_digits") = Histogram::kDefaultSignificantDigits)
        .def("record",
             [](PyHistogram& self, py::handle value, int64_t count) {
                 const int64_t v = value_arg(value, self.h);
                 Lock g(self.mu);
                 self.h.record(v, count);
             },
             py::arg("value"), py::arg("count") = 1,
             "record(value, count=1) -> None\n\n"
             "Records `count` occurrences of the integer `value`. O(1).\n"
             "Raises ValueError if value is outside [lowest, highest] (the message names both) or\n"
             "count < 0; TypeError if value is not an integer; OverflowError if the total count\n"
             "would pass 2**63-1.")
        .def("record_corrected",
             [](PyHistogram& self, py::handle value, int64_t expected_interval) {
                 const int64_t v = value_arg(value, self.h);
                 Lock g(self.mu);
                 self.h.record_corrected(v, expected_interval);
             },
             py::arg("value"), py::arg("expected_interval"),
             "record_corrected(value, expected_interval) -> None\n\n"
             "Records `value` corrected for coordinated omission (HdrHistogram semantics): when a\n"
             "sampler that should take a sample every `expected_interval` was stalled for `value`,\n"
             "the samples it missed are recorded too: value - k*expected_interval for k = 1, 2, ...\n"
             "while that is >= expected_interval. E.g. record_corrected(100, 30) records 100, 70,\n"
             "40. expected_interval == 0 disables the correction. Cost is O(buckets), not O(values).\n"
             "Raises ValueError if value is out of range, expected_interval < 0, or\n"
             "0 < expected_interval < lowest.")
        .def("record_many",
             [](PyHistogram& self, py::object values) {
                 // Infer the dtype first: converting a list straight to int64 would truncate 1.5.
                 py::array inferred = py::array::ensure(values);
                 if (inferred && inferred.size() == 0) return;
                 auto arr = py::array_t<int64_t, py::array::c_style>::ensure(inferred);
                 if (!arr) {
                     PyErr_Clear();
                     std::string what = py::str(py::type::of(values).attr("__name__"));
                     if (py::hasattr(values, "dtype"))
                         what += " of dtype " + py::str(values.attr("dtype")).cast<std::string>();
                     throw py::type_error(
                         "Histogram.record_many expects integers safely castable to int64 (a numpy "
                         "int64 array or a sequence of ints), got " + what +
                         "; convert with np.asarray(values, dtype=np.int64) if that is intended");
                 }
                 const int64_t* data = arr.data();
                 const size_t n = static_cast<size_t>(arr.size());
                 py::gil_scoped_release release;
                 Lock g(self.mu);
                 self.h.record_many(data, n);
             },
             py::arg("values"),
             "record_many(values) -> None\n\n"
             "Records every value of an int64 array (any shape) or a sequence of ints, with the GIL\n"
             "released. All or nothing: raises ValueError naming the first out-of-range value and\n"
             "its index and records nothing; TypeError for values not safely castable to int64\n"
             "(floats, uint64): cast them yourself.")
        .def("value_at_percentile",
             [](const PyHistogram& self, double p) {
                 Lock g(self.mu);
                 return self.h.value_at_percentile(p);
             },
             py::arg("p"),
             "value_at_percentile(p) -> int\n\n"
             "The value at percentile p (0..100), as HdrHistogram defines it: with n values\n"
             "recorded, the k-th smallest value for k = max(1, ceil(p/100 * n)) (i.e. the smallest v\n"
             "with at least p% of the values <= v; numpy's method='inverted_cdf'), reported as the\n"
             "highest value of its bucket and clamped to the exact max. So it is never below the\n"
             "true value and at most 10**-significant_digits above it (relative). p=0 gives the\n"
             "exact min and p=100 the exact max. A rank within 16 ulps above an integer counts as\n"
             "that integer (99.9% of 1000 values is the 999th). Returns 0 when empty.\n"
             "Raises ValueError if p is outside [0, 100] or NaN (also when empty).")
        .def("percentiles",
             [](const PyHistogram& self, const std::vector<double>& ps) {
                 Lock g(self.mu);
                 return self.h.percentiles(ps);
             },
             py::arg("ps"),
             "percentiles(ps) -> list[int]\n\n"
             "value_at_percentile for each p of the sequence `ps`, in order, in one pass over the\n"
             "buckets. Raises ValueError if any p is outside [0, 100] or NaN.")
        .def("merge",
             [](PyHistogram& self, const PyHistogram& other) {
                 if (&self == &other) {
                     Lock g(self.mu);
                     self.h.merge(self.h);
                     return;
                 }
                 std::scoped_lock g(self.mu, other.mu);
                 self.h.merge(other.h);
             },
             py::arg("other"),
             "merge(other) -> None\n\n"
             "Adds other's values to this histogram: afterwards it is bucket for bucket what\n"
             "recording both streams into one histogram gives (mean/stddev equal up to float\n"
             "rounding). `other` is unchanged; h.merge(h) doubles h.\n"
             "Raises ValueError naming both configurations when lowest, highest or\n"
             "significant_digits differ (no silent re-bucketing); OverflowError if the total count\n"
             "would pass 2**63-1.")
        .def("reset",
             [](PyHistogram& self) {
                 Lock g(self.mu);
                 self.h.reset();
             },
             "reset() -> None\n\nForgets every value (and frees the bucket memory); the parameters stay.")
        .def("to_bytes", &to_bytes,
             "to_bytes() -> bytes\n\n"
             "The histogram in pytps's compact binary format (magic b'PTPSHIST', version 1, the\n"
             "parameters, the exact statistics, run-length varint counts and a checksum; see\n"
             "docs/histogram.md). Histogram.from_bytes(h.to_bytes()) == h exactly.")
        .def_static("from_bytes", &from_buffer, py::arg("data"),
             "from_bytes(data) -> Histogram\n\n"
             "Rebuilds a histogram from to_bytes() output given as bytes, bytearray or memoryview.\n"
             "Raises ValueError saying what is wrong: not a pytps histogram (bad magic), truncated,\n"
             "trailing bytes, unsupported version, checksum mismatch, invalid parameters, or counts\n"
             "and statistics that disagree; TypeError if data is not a bytes-like object.")
        .def_property_readonly("count", [](const PyHistogram& s) { Lock g(s.mu); return s.h.count(); },
             "Number of values recorded (exact).")
        .def_property_readonly("min", [](const PyHistogram& s) { Lock g(s.mu); return s.h.min(); },
             "Smallest value recorded (exact); 0 when empty.")
        .def_property_readonly("max", [](const PyHistogram& s) { Lock g(s.mu); return s.h.max(); },
             "Largest value recorded (exact); 0 when empty.")
        .def_property_readonly("mean", [](const PyHistogram& s) { Lock g(s.mu); return s.h.mean(); },
             "Mean of the values recorded, from their exact 128-bit sum; 0.0 when empty.")
        .def_property_readonly("stddev", [](const PyHistogram& s) { Lock g(s.mu); return s.h.stddev(); },
             "Population standard deviation (divides by count, like numpy's default ddof=0) of the\n"
             "values recorded, from a Welford/Chan sum of squared deviations kept in long double;\n"
             "0.0 when empty.")
        .def_property_readonly("lowest", [](const PyHistogram& s) { return s.h.lowest(); },
             "Smallest recordable value (constructor parameter).")
        .def_property_readonly("highest", [](const PyHistogram& s) { return s.h.highest(); },
             "Largest recordable value (constructor parameter).")
        .def_property_readonly("significant_digits",
             [](const PyHistogram& s) { return s.h.significant_digits(); },
             "Decimal digits of precision of the buckets (constructor parameter).")
        .def_property_readonly("allocated_bytes",
             [](const PyHistogram& s) { Lock g(s.mu); return s.h.allocated_bytes(); },
             "Bytes currently held by the bucket counts (they are allocated per octave touched).")
        .def("__eq__",
             [](const PyHistogram& self, const py::object& other) -> py::object {
                 if (!py::isinstance<PyHistogram>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
                 const PyHistogram& o = other.cast<const PyHistogram&>();
                 if (&self == &o) return py::bool_(true);
                 std::scoped_lock g(self.mu, o.mu);
                 return py::bool_(self.h == o.h);
             },
             "Equal parameters, bucket counts and statistics (bit for bit).")
        .def("__repr__", [](const PyHistogram& s) { Lock g(s.mu); return repr(s.h); })
        .def(py::pickle([](const PyHistogram& self) { return to_bytes(self); },
                        [](const py::bytes& b) { return from_buffer(b); }));
}

}  // namespace pytps_bindings
