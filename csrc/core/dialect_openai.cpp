// OpenAI-style streams: Chat Completions, (legacy) Completions and the Responses API.
// The same shapes are served by vLLM, SGLang, TGI, llama.cpp and most gateways.
#include <cstring>

#include "core/dialects.hpp"

namespace pytps {

using json::JsonReader;
using json::Type;
using namespace dialect_util;

namespace {

// choices[].delta.tool_calls[]: {index, id, type, function: {name, arguments}}
void read_tool_call_deltas(JsonReader& j, StreamState& st, EventResult& r) {
    json::each_object(j, [&] {
        // The index may come after the fields it indexes: collect, then apply.
        int64_t index = 0;
        std::string_view id_raw, function_raw;
        bool has_id = false, has_function = false;
        j.begin_object();
        std::string_view key;
        while (j.next_key(key)) {
            if (key == "index") {
                if (!j.read_int(index)) j.skip_value();
            } else if (key == "id") {
                has_id = capture(j, id_raw);
            } else if (key == "function") {
                has_function = capture(j, function_raw);
            } else {
                j.skip_value();
            }
        }
        if (j.failed()) return;
        ToolCall* call = tool_or_reject(st, index, r);
        if (!call) return;
        if (has_id) {
            JsonReader idr(id_raw);
            std::string& id = st.scratch.subtype;
            read_string_into(idr, id);
            if (!id.empty()) call->id.assign(id);
        }
        if (has_function) {
            JsonReader fr(function_raw);
            if (fr.peek() == Type::Object) {
                fr.begin_object();
                std::string_view k;
                while (fr.next_key(k)) {
                    if (k == "name") r.tool_chars += append_string(fr, call->name);
                    else if (k == "arguments") r.tool_chars += append_string(fr, call->arguments);
                    else fr.skip_value();
                }
            }
        }
    });
}

// The answer text of a chunk, noting where its value lies for the ShapeCache.
void read_text_value(JsonReader& j, StreamState& st, EventResult& r) {
    ++r.effects;
    j.peek();
    r.text_value_begin = j.offset();
    r.content_chars += append_string(j, st.text);
    r.text_value_end = j.offset();
}

// The fast path: data is the learnt head, a JSON string, and the learnt tail.
bool read_known_shape(std::string_view data, StreamState& st, EventResult& r) {
    const ShapeCache& shape = st.shape_cache;
    if (!shape.valid || data.size() <= shape.head.size() + shape.tail.size() ||
        std::memcmp(data.data(), shape.head.data(), shape.head.size()) != 0 || data[shape.head.size()] != '"')
        return false;
    JsonReader j(data.substr(shape.head.size()));
    const size_t before = st.text.size();
    const bool ok = j.read_string(st.text);
    const size_t rest = data.size() - shape.head.size() - j.offset();
    if (ok && rest == shape.tail.size() &&
        std::memcmp(data.data() + data.size() - rest, shape.tail.data(), rest) == 0) {
        r.content_chars = count_code_points(std::string_view(st.text).substr(before));
        ++st.counters.shape_hits;
        return true;
    }
    st.text.resize(before);
    return false;
}

void read_chat_choice(JsonReader& j, StreamState& st, EventResult& r) {
    json::each_member(j, [&](std::string_view key) {
        if (key == "delta" && j.peek() == Type::Object) {
            j.begin_object();
            std::string_view k;
            // vLLM (and others) send the same text in both reasoning_content and reasoning:
            // it is one reasoning delta, so only one of them is read.
            std::string_view reasoning_raw;
            bool has_reasoning = false, reasoning_is_primary = false;
            while (j.next_key(k)) {
                if (k == "content" || k == "refusal") {  // a refusal is answer text too
                    read_text_value(j, st, r);
                } else if (k == "reasoning_content" || k == "reasoning") {
                    std::string_view raw;
                    if (!capture(j, raw)) break;
                    const bool primary = k == "reasoning_content";
                    if (raw != "null" && (!has_reasoning || (primary && !reasoning_is_primary))) {
                        reasoning_raw = raw;
                        has_reasoning = true;
                        reasoning_is_primary = primary;
                    }
                } else if (k == "tool_calls") {
                    ++r.effects;
                    read_tool_call_deltas(j, st, r);
                } else {
                    j.skip_value();
                }
            }
            if (has_reasoning && !j.failed()) {
                ++r.effects;
                JsonReader rr(reasoning_raw);
                r.reasoning_chars += append_string(rr, st.reasoning_text);
            }
        } else if (key == "text") {  // completions
            read_text_value(j, st, r);
        } else if (key == "finish_reason") {
            if (j.peek() == Type::String) {
                ++r.effects;
                j.read_string(st.replace_finish_reason());
            } else {
                j.skip_value();
            }
        } else {
            j.skip_value();
        }
    });
}

// The keys under which OpenAI-compatible servers report their own per-request timing, and
// whose definitions the value follows (docs/real-servers.md): llama.cpp's `timings`,
// Cerebras's `time_info`, Groq's `x_groq` (its `usage` holds the times). Null for any other key.
const char* server_timings_source(std::string_view key) {
    if (key == "timings") return "llama.cpp";
    if (key == "time_info") return "cerebras";
    if (key == "x_groq") return "groq";
    return nullptr;
}

// Chat chunks and completion chunks differ only in what a choice holds, and
// read_chat_choice reads both.
void extract_openai_chunk(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    if (done_marker(data, r)) return;
    if (read_known_shape(data, st, r)) return;
    JsonReader j(data);
    PrefixCache& cache = st.prefix_cache;
    // Until the first key with per-event effects, remember where we are: that head is
    // what the next event will most likely repeat byte for byte.
    bool recording = !cache.matches(data);
    if (!recording) {
        ++st.counters.prefix_hits;
        j.restore(cache.checkpoint);
    } else if (!j.begin_object()) {
        check(j, r);
        return;
    }
    bool has_error = event_type == "error";
    json::Checkpoint before;
    std::string_view key;
    for (;;) {
        if (recording) j.save(before);
        if (!j.next_key(key)) break;
        const char* timings_source = server_timings_source(key);
        if (recording && (key == "choices" || key == "usage" || key == "error" || timings_source)) {
            // Worth it only when the head is long enough to beat a memcmp.
            if (before.offset >= 32) cache.store(data, before);
            recording = false;
        }
        if (key == "choices") {
            if (j.peek() != Type::Array) {
                j.skip_value();
                continue;
            }
            j.begin_array();
            while (j.next_element()) read_chat_choice(j, st, r);
        } else if (key == "usage") {
            if (j.peek() == Type::Null) {
                j.skip_value();  // "usage": null on every chunk changes nothing
            } else {
                ++r.effects;
                read_usage(j, st.usage, &r.cumulative_completion_tokens);
            }
        } else if (timings_source && j.peek() == Type::Object) {
            std::string_view raw;
            if (capture(j, raw)) {
                ++r.effects;
                st.replace_server_timings(timings_source).assign(raw);
            }
        } else if (key == "id" && st.response_id.empty()) {
            ++r.effects;
            read_string_into(j, st.response_id);
        } else if (key == "model" && st.model.empty()) {
            ++r.effects;
            read_string_into(j, st.model);
        } else if (key == "error") {
            ++r.effects;
            has_error = true;
            j.skip_value();
        } else {
            j.skip_value();
        }
    }
    if (!j.finish()) {
        check(j, r);
        return;
    }
    if (has_error) {
        mark_error(data, r);
    } else if (r.effects == 1 && r.content_chars > 0 && r.text_value_end > r.text_value_begin) {
        // The fast path did not read this event: its shape, if learnable, replaces the cached one.
        st.shape_cache.store(data, r.text_value_begin, r.text_value_end);
    }
}

// The Responses API's `response` object (in created/in_progress/completed/failed/incomplete).
void read_response_object(std::string_view raw, StreamState& st, EventResult& r, bool take_status) {
    JsonReader j(raw);
    json::each_member(j, [&](std::string_view key) {
        if (key == "id" && st.response_id.empty()) {
            read_string_into(j, st.response_id);
        } else if (key == "model" && st.model.empty()) {
            read_string_into(j, st.model);
        } else if (key == "usage") {
            read_usage(j, st.usage, nullptr);
        } else if (key == "status" && take_status && j.peek() == Type::String) {
            j.read_string(st.replace_finish_reason());
        } else if (key == "error" && j.peek() == Type::Object) {
            std::string_view err;
            capture(j, err);
            r.in_stream_error = true;
            r.error_message = error_message(std::string("{\"error\":") + std::string(err) + "}");
        } else {
            j.skip_value();
        }
    });
}

}  // namespace

void extract_openai_chat(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    extract_openai_chunk(event_type, data, st, r);
}

void extract_openai_completions(std::string_view event_type, std::string_view data, StreamState& st,
                                EventResult& r) {
    extract_openai_chunk(event_type, data, st, r);
}

void extract_openai_responses(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    if (done_marker(data, r)) return;
    // Keys may come in any order, so the values are captured and read once the type is known.
    std::string& type = st.scratch.type;
    type.clear();
    std::string_view delta, response, item;
    bool has_delta = false, has_response = false, has_item = false;
    int64_t output_index = 0;
    const bool read = each_key(data, r, [&](JsonReader& j, std::string_view key) {
        if (key == "type") read_string_into(j, type);
        else if (key == "delta") has_delta = capture(j, delta);
        else if (key == "response") has_response = capture(j, response);
        else if (key == "item") has_item = capture(j, item);
        else if (key == "output_index") {
            if (!j.read_int(output_index)) j.skip_value();
        } else {
            j.skip_value();
        }
    });
    if (!read) return;
    if (type.empty()) type.assign(event_type.data(), event_type.size());

    JsonReader d(has_delta ? delta : std::string_view("null"));
    if (type == "response.output_text.delta" || type == "response.refusal.delta") {
        r.content_chars += append_string(d, st.text);
    } else if (type == "response.reasoning_text.delta" || type == "response.reasoning_summary_text.delta") {
        r.reasoning_chars += append_string(d, st.reasoning_text);
    } else if (type == "response.function_call_arguments.delta") {
        if (ToolCall* call = tool_or_reject(st, output_index, r)) r.tool_chars += append_string(d, call->arguments);
    } else if (type == "response.output_item.added" && has_item) {
        // A function call's name (and call id) arrive when its item is added.
        JsonReader it(item);
        std::string item_type, name, call_id;
        json::each_member(it, [&](std::string_view k) {
            if (k == "type") read_string_into(it, item_type);
            else if (k == "name") read_string_into(it, name);
            else if (k == "call_id") read_string_into(it, call_id);
            else it.skip_value();
        });
        if (item_type == "function_call") {
            if (ToolCall* call = tool_or_reject(st, output_index, r)) {
                call->id.assign(call_id);
                call->name += name;
                r.tool_chars += count_code_points(name);
            }
        }
    } else if (type == "response.created" || type == "response.in_progress") {
        if (has_response) read_response_object(response, st, r, false);
    } else if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
        if (has_response) read_response_object(response, st, r, true);
        r.terminal = true;
        if (type == "response.failed" && !r.in_stream_error) mark_error(data, r);
    } else if (type == "error") {
        mark_error(data, r);
    }
}

}  // namespace pytps
