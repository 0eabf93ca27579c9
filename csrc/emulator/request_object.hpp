// The loop over a request body's keys, shared by the generation and the body routes' parsers
// (chat_request.cpp, embeddings.cpp); a header of its own so that chat_request.hpp keeps the JSON
// reader out of the server's view.
#pragma once
#include <string>
#include <string_view>

#include "core/json_scan.hpp"
#include "emulator/chat_request.hpp"

namespace pytps {

// Reads a request body's object: "model" into model, each other key to on_key(key), which reads
// or skips its value and returns false to stop (an error set, or the reader failed); reading also
// stops at the first error. False when the body is not an object (error set by open_request_object).
template <class OnKey>
bool each_request_key(json::JsonReader& r, std::string& model, std::string& error, OnKey&& on_key) {
    if (!open_request_object(r, error)) return false;
    std::string_view key;
    while (error.empty() && r.next_key(key)) {
        if (key == "model") read_model_field(r, model, error);
        else if (!on_key(key)) break;
    }
    return true;
}

}  // namespace pytps
