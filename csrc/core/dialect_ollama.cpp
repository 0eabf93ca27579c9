// Ollama /api/chat and /api/generate: newline-delimited JSON objects, the last with
// "done": true and the counts.
#include "core/dialects.hpp"

namespace pytps {

using json::JsonReader;
using json::Type;
using namespace dialect_util;

namespace {

// message.tool_calls[]: {function: {name, arguments: {...}}}; Ollama sends each call
// whole, with arguments as an object, which is kept as its JSON text.
void read_tool_calls(JsonReader& j, StreamState& st, EventResult& r) {
    json::each_object(j, [&] {
        ToolCall* opened = tool_or_reject(st, static_cast<int64_t>(st.tool_calls.size()), r);
        if (!opened) {
            j.skip_value();
            return;
        }
        ToolCall& call = *opened;
        j.begin_object();
        std::string_view key;
        while (j.next_key(key)) {
            if (key == "function" && j.peek() == Type::Object) {
                j.begin_object();
                std::string_view k;
                while (j.next_key(k)) {
                    if (k == "name") {
                        r.tool_chars += append_string(j, call.name);
                    } else if (k == "arguments") {
                        if (j.peek() == Type::String) {
                            r.tool_chars += append_string(j, call.arguments);
                        } else {
                            std::string_view raw;
                            if (capture(j, raw)) {
                                // Raw JSON text may hold invalid UTF-8 inside its strings.
                                const size_t before = call.arguments.size();
                                json::append_utf8_sanitized(call.arguments, raw);
                                r.tool_chars += count_code_points(std::string_view(call.arguments).substr(before));
                            }
                        }
                    } else {
                        j.skip_value();
                    }
                }
            } else if (key == "id") {
                read_string_into(j, call.id);
            } else {
                j.skip_value();
            }
        }
    });
}

void read_message(JsonReader& j, StreamState& st, EventResult& r) {
    json::each_member(j, [&](std::string_view key) {
        if (key == "content") r.content_chars += append_string(j, st.text);
        else if (key == "thinking") r.reasoning_chars += append_string(j, st.reasoning_text);
        else if (key == "tool_calls") read_tool_calls(j, st, r);
        else j.skip_value();
    });
}

// Adds "name":raw to a JSON object being written (opened by the first call, closed by the caller).
void append_timing(std::string& timings, std::string_view name, std::string_view raw) {
    timings += timings.empty() ? "{\"" : ",\"";
    timings.append(name.data(), name.size());
    timings += "\":";
    timings.append(raw.data(), raw.size());
}

}  // namespace

void extract_ollama(std::string_view, std::string_view data, StreamState& st, EventResult& r) {
    bool done = false, has_error = false;
    // The final message's durations (ns) and counts, kept as a JSON object of their own: the
    // message also carries text (and /api/generate a `context` array) that is no timing.
    std::string timings;
    // The raw text of a number value (kept as the server wrote it), or empty with the value skipped.
    auto number = [](JsonReader& j, std::string_view& raw) {
        if (j.peek() == Type::Number && capture(j, raw)) return true;
        if (!j.failed()) j.skip_value();
        return false;
    };
    const bool read = each_key(data, r, [&](JsonReader& j, std::string_view key) {
        std::string_view raw;
        if (key == "message") {
            read_message(j, st, r);
        } else if (key == "response") {  // /api/generate
            r.content_chars += append_string(j, st.text);
        } else if (key == "thinking") {  // /api/generate with think
            r.reasoning_chars += append_string(j, st.reasoning_text);
        } else if (key == "done") {
            if (!j.read_bool(done)) j.skip_value();
        } else if (key == "done_reason" && j.peek() == Type::String) {
            j.read_string(st.replace_finish_reason());
        } else if (key == "prompt_eval_count" || key == "eval_count") {
            if (!number(j, raw)) return;
            append_timing(timings, key, raw);
            JsonReader count(raw);
            int64_t v;
            if (count.read_int(v)) (key == "eval_count" ? st.usage.completion_tokens : st.usage.prompt_tokens) = v;
        } else if (key == "total_duration" || key == "load_duration" || key == "prompt_eval_duration" ||
                   key == "eval_duration") {
            if (number(j, raw)) append_timing(timings, key, raw);
        } else if (key == "model" && st.model.empty()) {
            read_string_into(j, st.model);
        } else if (key == "error") {
            has_error = true;
            j.skip_value();
        } else {
            j.skip_value();
        }
    });
    if (!read) return;
    if (done) r.terminal = true;
    if (has_error) {
        mark_error(data, r);
    } else if (!timings.empty()) {
        timings += '}';
        st.replace_server_timings("ollama").assign(timings);
    }
}

}  // namespace pytps
