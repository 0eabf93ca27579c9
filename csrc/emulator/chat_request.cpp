#include "emulator/chat_request.hpp"

#include "core/json_scan.hpp"
#include "emulator/images.hpp"
#include "emulator/request_object.hpp"

namespace pytps {

bool read_to_end(json::JsonReader& r, std::string& error) {
    if (r.failed() || (error.empty() && !r.finish())) {
        error = std::string("We could not parse the JSON body of your request: ") + r.error() + " at byte " +
                std::to_string(r.error_offset()) + ".";
        return false;
    }
    return error.empty();
}

bool open_request_object(json::JsonReader& r, std::string& error) {
    using json::Type;
    if (r.peek() == Type::Object) {
        r.begin_object();
        return true;
    }
    if (r.peek() == Type::End) {
        error = "The request body is empty; send a JSON object.";
    } else if (r.peek() == Type::Error) {
        error = "We could not parse the JSON body of your request: invalid JSON at byte " + std::to_string(r.offset()) + ".";
    } else {
        error = "The request body must be a JSON object.";
    }
    return false;
}

void read_model_field(json::JsonReader& r, std::string& model, std::string& error) {
    model.clear();
    if (!r.read_string(model) && !r.failed()) error = "Invalid type for 'model': expected a string.";
}

const char* api_name(const ApiPath& api) {
    switch (api.dialect) {
        case Dialect::OpenAIChat: return "chat";
        case Dialect::OpenAICompletions: return "completions";
        case Dialect::OpenAIResponses: return "responses";
        case Dialect::Anthropic: return "messages";
        case Dialect::Ollama: return api.takes_prompt ? "ollama_generate" : "ollama_chat";
        case Dialect::Json:
        case Dialect::SpeechPcm:
        case Dialect::SpeechWav:
        case Dialect::SpeechSse:
        case Dialect::SpeechCoded:
        case Dialect::Transcription: break;
    }
    return "?";
}

namespace {

using json::JsonReader;
using json::Type;

// Adds every string value under the current value (keys excluded) to `text`; `last`, when
// given, ends up holding the last of them. An image (a data:image/ URI; base64 PNG or JPEG under
// a "data" or "images" key: Anthropic's source, Ollama's images) is not text: it is counted in
// `images` by the tile rule (images.hpp). `bare_ok`: the value is under such a key.
void sum_strings(JsonReader& r, std::string& text, std::string* last = nullptr, ChatImages* images = nullptr,
                 bool bare_ok = false) {
    switch (r.peek()) {
        case Type::String: {
            std::string s;
            if (r.read_string(s)) {
                if (images && looks_like_image(s, bare_ok)) {
                    ++images->count;
                    images->tokens += image_tokens(image_size_of(s));
                    return;
                }
                text += s;
                if (last) *last = std::move(s);
            }
            return;
        }
        case Type::Array:
            if (!r.begin_array()) return;
            while (r.next_element()) sum_strings(r, text, last, images, bare_ok);
            return;
        case Type::Object: {
            if (!r.begin_object()) return;
            std::string_view k;
            while (r.next_key(k)) sum_strings(r, text, last, images, k == "data" || k == "images");
            return;
        }
        default:
            r.skip_value();
    }
}

// Reads a boolean or null; a value of another type sets `error`.
bool read_bool_field(JsonReader& r, const char* key, bool& out, std::string& error) {
    if (r.read_bool(out) || r.read_null()) return true;
    if (!r.failed()) error = std::string("Invalid type for '") + key + "': expected a boolean.";
    return false;
}

// A token limit: a positive integer or null (Ollama's num_predict also takes -1 and -2,
// "no limit", which count as absent).
bool read_limit(JsonReader& r, const char* key, int64_t& out, bool ollama, std::string& error) {
    int64_t v = 0;
    if (r.read_null()) return true;
    if (r.read_int(v) && (v >= 1 || (ollama && (v == -1 || v == -2)))) {
        if (v >= 1 && out < 0) out = v;
        return true;
    }
    if (!r.failed()) error = std::string("Invalid '") + key + "': expected a positive integer.";
    return false;
}

// A tool object's "name" into name, or (top: the tool itself) its "function" object's.
void read_tool_name(JsonReader& r, std::string& name, bool top) {
    json::each_member(r, [&](std::string_view key) {
        if (key == "name" && r.peek() == Type::String) {
            name.clear();
            r.read_string(name);
        } else if (top && key == "function" && r.peek() == Type::Object) {
            read_tool_name(r, name, false);
        } else {
            r.skip_value();
        }
    });
}

// The name of the first tool: Chat Completions / Ollama {"function": {"name"}}, Anthropic
// and Responses {"name"}.
void first_tool_name(JsonReader& r, std::string& name) {
    if (r.peek() != Type::Array) {
        r.skip_value();
        return;
    }
    r.begin_array();
    bool first = true;
    while (r.next_element()) {
        if (!first || r.peek() != Type::Object) {
            r.skip_value();
            continue;
        }
        first = false;
        read_tool_name(r, name, true);
    }
}

}  // namespace

bool parse_chat_request(const ApiPath& api, std::string_view body, ChatRequest& req, std::string& error) {
    const bool ollama = api.dialect == Dialect::Ollama;
    const bool responses = api.dialect == Dialect::OpenAIResponses;
    const char* required = responses ? "input" : api.takes_prompt ? "prompt" : "messages";
    // Which JSON types the required field may have.
    const bool needs_array = !responses && !api.takes_prompt;
    const bool string_ok = !needs_array;
    const bool array_ok = needs_array || responses || api.dialect == Dialect::OpenAICompletions;

    req.stream = ollama;  // Ollama streams unless told not to; the others only when asked
    bool have_required = false, have_stream_options = false;
    int64_t limit[3] = {-1, -1, -1};  // max_completion_tokens, max_tokens, max_output_tokens
    std::string instructions;         // Responses' instructions

    JsonReader r(body);
    const bool opened = each_request_key(r, req.model, error, [&](std::string_view key) {
        if (key == "stream") {
            read_bool_field(r, "stream", req.stream, error);
        } else if (key == "stream_options") {
            if (r.read_null()) return true;
            if (r.peek() != Type::Object) {
                if (!r.failed()) error = "Invalid type for 'stream_options': expected an object.";
                return false;
            }
            have_stream_options = true;
            r.begin_object();
            std::string_view k2;
            while (error.empty() && r.next_key(k2)) {
                if (k2 == "include_usage") {
                    read_bool_field(r, "stream_options.include_usage", req.include_usage, error);
                } else if (k2 == "continuous_usage_stats") {
                    read_bool_field(r, "stream_options.continuous_usage_stats", req.continuous_usage, error);
                } else {
                    r.skip_value();
                }
            }
        } else if (key == "max_completion_tokens") {
            read_limit(r, "max_completion_tokens", limit[0], false, error);
        } else if (key == "max_tokens") {
            read_limit(r, "max_tokens", limit[1], false, error);
        } else if (key == "max_output_tokens") {
            read_limit(r, "max_output_tokens", limit[2], false, error);
        } else if (key == "options" && ollama && r.peek() == Type::Object) {
            r.begin_object();
            std::string_view k2;
            while (error.empty() && r.next_key(k2)) {
                if (k2 == "num_predict") {
                    read_limit(r, "options.num_predict", req.max_tokens, true, error);
                } else {
                    r.skip_value();
                }
            }
        } else if (key == "tools") {
            first_tool_name(r, req.tool_name);
        } else if (key == required) {
            have_required = true;
            const Type t = r.peek();
            if (!((t == Type::String && string_ok) || (t == Type::Array && array_ok))) {
                if (!r.failed())
                    error = std::string("Invalid type for '") + required + "': expected " +
                            (string_ok && array_ok ? "a string or an array" : string_ok ? "a string" : "an array") + ".";
                return false;
            }
            sum_strings(r, req.prompt_text, &req.last_text, &req.images);
        } else if (key == "instructions" && responses) {
            sum_strings(r, instructions);
        } else if (key == "store" && responses) {
            if (!r.read_null()) read_bool_field(r, "store", req.store, error);
        } else if (key == "previous_response_id" && responses) {
            if (r.read_null()) return true;
            if (r.peek() != Type::String) {
                if (!r.failed()) error = "Invalid type for 'previous_response_id': expected a string.";
                return false;
            }
            r.read_string(req.previous_response_id);
        } else if (key == "system" || key == "instructions") {
            sum_strings(r, req.prompt_text);
        } else {
            r.skip_value();
        }
        return true;
    });
    if (!opened) return false;
    if (!read_to_end(r, error)) return false;
    if (responses) {  // instructions first, wherever the body put them: the state of a previous response goes after them
        req.instructions_chars = instructions.size();
        req.prompt_text.insert(0, instructions);
    }
    req.prompt_chars = static_cast<int64_t>(req.prompt_text.size());
    if (!have_required) {
        error = std::string("Missing required parameter: '") + required + "'.";
        return false;
    }
    if (have_stream_options && !req.stream) {
        error = "The 'stream_options' parameter is only allowed when 'stream' is enabled.";
        return false;
    }
    for (int64_t v : limit)
        if (req.max_tokens < 0 && v > 0) req.max_tokens = v;
    if (api.dialect == Dialect::Anthropic && req.max_tokens < 0) {
        error = "max_tokens: Field required";
        return false;
    }
    return true;
}

int64_t estimate_prompt_tokens(const ChatRequest& req) {
    int64_t t = (req.prompt_chars + 3) / 4;
    return (t < 1 ? 1 : t) + req.images.tokens;
}

}  // namespace pytps
