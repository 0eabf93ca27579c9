#include "bindings/register.hpp"

#ifndef PYTPS_VERSION
#define PYTPS_VERSION "0+unknown"
#endif

PYBIND11_MODULE(_core, m) {
    m.doc() = "pytps native core: clock, SSE parsing, stream recording, histograms.";
    m.attr("__version__") = PYTPS_VERSION;
    pytps_bindings::register_errors(m);
    pytps_bindings::register_clock(m);
    pytps_bindings::register_io(m);
    pytps_bindings::register_sse(m);
    pytps_bindings::register_recorder(m);
    pytps_bindings::register_histogram(m);
    pytps_bindings::register_emulator(m);
    pytps_bindings::register_http(m);
    pytps_bindings::register_client(m);
    pytps_bindings::register_pacer(m);
    pytps_bindings::register_jsontext(m);
    pytps_bindings::register_words(m);
}
