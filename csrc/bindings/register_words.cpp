// The synthetic workload's prompt words, drawn natively (core/word_draw; issue 42).
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/word_draw.hpp"

namespace pytps_bindings {

namespace {

// The k word indices shuffled_words draws for this seed, over a tuple of n words.
std::vector<uint32_t> drawn_indices(py::handle seed_bytes, size_t n, size_t k) {
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
    return pytps::shuffled_word_indices(key, static_cast<uint32_t>(n), k);
}

py::list words_at(py::tuple words, const std::vector<uint32_t>& drawn) {
    py::list out(drawn.size());
    for (size_t i = 0; i < drawn.size(); ++i) {
        PyObject* word = PyTuple_GET_ITEM(words.ptr(), static_cast<Py_ssize_t>(drawn[i]));
        Py_INCREF(word);
        PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), word);
    }
    return out;
}

}  // namespace

void register_words(py::module_& m) {
    m.def(
        "shuffled_words",
        [](py::handle seed_bytes, py::tuple words, size_t k) -> py::list {
            return words_at(words, drawn_indices(seed_bytes, words.size(), k));
        },
        py::arg("seed"), py::arg("words"), py::arg("k"),
        "shuffled_words(seed, words, k) -> list\n\n"
        "pytps.workload.synthetic._shuffled_words(random.Random(int.from_bytes(seed)), k) over the\n"
        "tuple `words`: the same k words, drawn in C++.");
    m.def(
        "shuffled_words_text",
        [](py::handle seed_bytes, py::tuple words, size_t k) -> py::object {
            const std::vector<uint32_t> drawn = drawn_indices(seed_bytes, words.size(), k);
            // " ".join(shuffled_words(...)) without the list: a prompt's words are ASCII (the
            // synthetic workload's list), so the text is laid out by copies into one new string;
            // a word of any other kind (or a str subclass) leaves the join to Python's.
            size_t total = drawn.empty() ? 0 : drawn.size() - 1;
            bool ascii = true;
            for (uint32_t at : drawn) {
                PyObject* word = PyTuple_GET_ITEM(words.ptr(), static_cast<Py_ssize_t>(at));
                if (!PyUnicode_CheckExact(word) || !PyUnicode_IS_COMPACT_ASCII(word)) {
                    ascii = false;
                    break;
                }
                total += static_cast<size_t>(PyUnicode_GET_LENGTH(word));
            }
            if (!ascii) return py::str(" ").attr("join")(words_at(words, drawn));
            PyObject* text = PyUnicode_New(static_cast<Py_ssize_t>(total), 127);
            if (text == nullptr) throw py::error_already_set();
            auto* out = static_cast<char*>(PyUnicode_DATA(text));
            for (size_t i = 0; i < drawn.size(); ++i) {
                if (i > 0) *out++ = ' ';
                PyObject* word = PyTuple_GET_ITEM(words.ptr(), static_cast<Py_ssize_t>(drawn[i]));
                const auto n = static_cast<size_t>(PyUnicode_GET_LENGTH(word));
                std::memcpy(out, PyUnicode_DATA(word), n);
                out += n;
            }
            return py::reinterpret_steal<py::object>(text);
        },
        py::arg("seed"), py::arg("words"), py::arg("k"),
        "shuffled_words_text(seed, words, k) -> str\n\n"
        "\" \".join(shuffled_words(seed, words, k)), without the list of words.");
}

}  // namespace pytps_bindings
