#include <cstring>

#include "core/dialects.hpp"

namespace pytps {

const char* dialect_name(Dialect d) {
    switch (d) {
        case Dialect::OpenAIChat: return "openai-chat";
        case Dialect::OpenAICompletions: return "openai-completions";
        case Dialect::OpenAIResponses: return "openai-responses";
        case Dialect::Anthropic: return "anthropic";
        case Dialect::Ollama: return "ollama";
        case Dialect::Json: return "json";
        case Dialect::SpeechPcm: return "speech-pcm";
        case Dialect::SpeechWav: return "speech-wav";
        case Dialect::SpeechSse: return "speech-sse";
        case Dialect::Transcription: return "transcription";
        case Dialect::SpeechCoded: return "speech-coded";
    }
    return "?";
}

std::string dialect_list() {
    std::string s;
    for (Dialect d : kAllDialects) {
        if (!s.empty()) s += ", ";
        s += dialect_name(d);
    }
    for (Dialect d : kAudioDialects) {
        s += ", ";
        s += dialect_name(d);
    }
    return s + ", json (a whole JSON body)";
}

bool parse_dialect(std::string_view name, Dialect& out) {
    if (name == "json") {
        out = Dialect::Json;
        return true;
    }
    for (Dialect d : kAllDialects) {
        if (name == dialect_name(d)) {
            out = d;
            return true;
        }
    }
    for (Dialect d : kAudioDialects) {
        if (name == dialect_name(d)) {
            out = d;
            return true;
        }
    }
    return false;
}

const AudioApiPath* find_audio_api_path(std::string_view path) {
    for (const AudioApiPath& a : kAudioApiPaths)
        if (path == a.path) return &a;
    return nullptr;
}

const ApiPath* find_api_path(std::string_view path) {
    for (const ApiPath& a : kApiPaths)
        if (path == a.path) return &a;
    return nullptr;
}

const BodyApiPath* find_body_api_path(std::string_view path) {
    for (const BodyApiPath& a : kBodyApiPaths)
        if (path == a.path) return &a;
    return nullptr;
}

namespace dialect_util {

size_t count_code_points(std::string_view s) {
    size_t count = 0;
    for (const char c : s) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return count;
}

size_t append_string(json::JsonReader& r, std::string& dest) {
    const size_t before = dest.size();
    if (r.read_string(dest)) return count_code_points(std::string_view(dest).substr(before));
    if (!r.failed()) r.skip_value();  // null, or a type we do not take text from
    return 0;
}

void read_string_into(json::JsonReader& r, std::string& out) {
    out.clear();
    if (!r.read_string(out) && !r.failed()) r.skip_value();
}

bool capture(json::JsonReader& r, std::string_view& raw) {
    r.peek();  // skip whitespace so the capture starts at the value
    const size_t start = r.offset();
    if (!r.skip_value()) return false;
    raw = std::string_view(r.input().data() + start, r.offset() - start);
    return true;
}

bool read_usage(json::JsonReader& r, Usage& u, int64_t* completion) {
    if (r.peek() != json::Type::Object) {
        r.skip_value();  // usage: null
        return !r.failed();
    }
    r.begin_object();
    std::string_view key;
    auto read_count = [&](int64_t& field) {
        int64_t v;
        if (r.read_int(v)) field = v;
        else r.skip_value();
    };
    // Nested details objects carry one field each that we keep.
    auto read_detail = [&](const char* name, int64_t& field) {
        if (r.peek() != json::Type::Object) {
            r.skip_value();
            return;
        }
        r.begin_object();
        std::string_view k;
        while (r.next_key(k)) {
            if (k == name) read_count(field);
            else r.skip_value();
        }
    };
    while (r.next_key(key)) {
        if (key == "prompt_tokens" || key == "input_tokens" || key == "prompt_eval_count") {
            read_count(u.prompt_tokens);
        } else if (key == "completion_tokens" || key == "output_tokens" || key == "eval_count") {
            int64_t v;
            if (r.read_int(v)) {
                u.completion_tokens = v;
                if (completion) *completion = v;
            } else {
                r.skip_value();
            }
        } else if (key == "total_tokens") {
            read_count(u.total_tokens);
        } else if (key == "completion_tokens_details" || key == "output_tokens_details") {
            read_detail("reasoning_tokens", u.reasoning_tokens);
        } else if (key == "prompt_tokens_details" || key == "input_tokens_details") {
            read_detail("cached_tokens", u.cached_tokens);
        } else if (key == "cache_read_input_tokens") {
            read_count(u.cached_tokens);
        } else {
            r.skip_value();
        }
    }
    return !r.failed();
}

std::string error_message(std::string_view data) {
    json::JsonReader r(data);
    std::string message;
    if (r.peek() != json::Type::Object) return std::string(data);
    r.begin_object();
    std::string_view key;
    while (r.next_key(key)) {
        if (key == "error") {
            if (r.peek() == json::Type::String) {
                r.read_string(message);
            } else if (r.peek() == json::Type::Object) {
                r.begin_object();
                std::string_view k;
                while (r.next_key(k)) {
                    if (k == "message") read_string_into(r, message);
                    else r.skip_value();
                }
            } else {
                r.skip_value();
            }
        } else if (key == "message" && message.empty()) {
            read_string_into(r, message);
        } else {
            r.skip_value();
        }
    }
    if (r.failed() || message.empty()) return std::string(data);
    return message;
}

void mark_error(std::string_view data, EventResult& r) {
    r.in_stream_error = true;
    r.error_message = error_message(data);
}

}  // namespace dialect_util
}  // namespace pytps
