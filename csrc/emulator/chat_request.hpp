// What the emulator needs from a generation request body, behind one function so the JSON
// reader underneath can change without touching the server.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dialect_table.hpp"

namespace pytps {
namespace json {
class JsonReader;
}

// Every route's first and common steps: the body must be a JSON object (false, with `error` the
// API's message: empty, malformed at byte N, or not an object), and "model" must be a string.
bool open_request_object(json::JsonReader& r, std::string& error);
void read_model_field(json::JsonReader& r, std::string& model, std::string& error);

// The end of reading a request body: false, with `error` the API's message, when the JSON was
// malformed or a field was refused (`error` already set) — what every route's reader does last.
bool read_to_end(json::JsonReader& r, std::string& error);

// The name of a generation route in the ground-truth records: chat, completions, responses,
// messages, ollama_chat, ollama_generate.
const char* api_name(const ApiPath& api);

// The images of a request's messages (emulator/images.hpp).
struct ChatImages {
    int64_t count = 0;
    int64_t tokens = 0;  // by the tile rule, summed
};

struct ChatRequest {
    std::string model;          // empty: the emulator's model name
    bool stream = false;        // Ollama's default is true; the parser applies the per-API default
    bool include_usage = false;         // stream_options.include_usage
    bool continuous_usage = false;      // stream_options.continuous_usage_stats (vLLM)
    int64_t max_tokens = -1;            // max_tokens / max_completion_tokens / max_output_tokens / num_predict; -1: absent
    int64_t prompt_chars = 0;           // bytes of every string under messages/prompt/input/system/instructions
    std::string prompt_text;            // those strings, concatenated in body order (the prefix cache's key)
    std::string last_text;              // the last string under messages/prompt/input (the answer book's key)
    std::string tool_name;              // first tool's name in `tools`, if any
    ChatImages images;                  // image parts: not text, counted by the tile rule
    // Responses: `previous_response_id` (empty: none), and the bytes of `instructions` at the
    // start of prompt_text (instructions are not carried over by previous_response_id, as OpenAI's).
    std::string previous_response_id;
    size_t instructions_chars = 0;
    bool store = true;  // Responses' `store`: false keeps no state for a later previous_response_id
};

// Parses `body` as the request to the route `api` (one of the core's kApiPaths). On failure returns false and sets `error` to a
// message fit for the 400 response (what was wrong, in the provider's words where possible).
bool parse_chat_request(const ApiPath& api, std::string_view body, ChatRequest& req, std::string& error);

// The documented estimate: ceil(prompt_chars / 4), at least 1, plus the images' tokens.
int64_t estimate_prompt_tokens(const ChatRequest& req);

}  // namespace pytps
