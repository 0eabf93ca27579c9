// The synthetic workload's prompt words, drawn natively (core/word_draw; issue 42).
#include <Python.h>

#include <cstdint>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/word_draw.hpp"

namespace pytps_bindings {

void register_words(py::module_& m) {
    m.def(
        "shuffled_words",
        [](py::handle seed_bytes, py::tuple words, size_t k) -> py::list {
            const size_t n = words.size();
            if (n == 0 || n > UINT32_MAX) throw py::value_error("words: 1 to 2**32 - 1 words");
            // The seed integer, int.from_bytes(seed) (big-endian), as CPython's random_seed hands
            // it to init_by_array: its 32-bit words, least significant first, at least one.
            BytesArg seed(seed_bytes);
            const auto* b = reinterpret_cast<const unsigned char*>(seed.data());
            size_t len = seed.size();
            while (len > 0 && b[0] == 0) {
                ++b;
                --len;
            }
            std::vector<uint32_t> key(len == 0 ? 1 : (len + 3) / 4, 0U);
            for (size_t byte = 0; byte < len; ++byte)  // byte 0 is the least significant
                key[byte / 4] |= static_cast<uint32_t>(b[len - 1 - byte]) << (8 * (byte % 4));
            const std::vector<uint32_t> drawn = pytps::shuffled_word_indices(key, static_cast<uint32_t>(n), k);
            py::list out(drawn.size());
            for (size_t i = 0; i < drawn.size(); ++i) {
                PyObject* word = PyTuple_GET_ITEM(words.ptr(), static_cast<Py_ssize_t>(drawn[i]));
                Py_INCREF(word);
                PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), word);
            }
            return out;
        },
        py::arg("seed"), py::arg("words"), py::arg("k"),
        "shuffled_words(seed, words, k) -> list\n\n"
        "pytps.workload.synthetic._shuffled_words(random.Random(int.from_bytes(seed)), k) over the\n"
        "tuple `words`: the same k words, drawn in C++.");
}

}  // namespace pytps_bindings
