// Anthropic Messages streaming: message_start, content_block_start/delta/stop,
// message_delta, message_stop, ping and error events.
#include "core/dialects.hpp"

namespace pytps {

using json::JsonReader;
using json::Type;
using namespace dialect_util;

namespace {

// message_start's `message`: id, model and the first usage report.
void read_message(std::string_view raw, StreamState& st) {
    JsonReader j(raw);
    json::each_member(j, [&](std::string_view key) {
        if (key == "id" && st.response_id.empty()) read_string_into(j, st.response_id);
        else if (key == "model" && st.model.empty()) read_string_into(j, st.model);
        else if (key == "usage") read_usage(j, st.usage, nullptr);
        else j.skip_value();
    });
}

// content_block_start's `content_block`: a tool_use block names its tool; text and
// thinking blocks normally start empty but may carry text.
void read_block_start(std::string_view raw, int64_t index, StreamState& st, EventResult& r) {
    JsonReader j(raw);
    std::string type, id, name;
    std::string_view text, thinking;
    bool has_text = false, has_thinking = false;
    json::each_member(j, [&](std::string_view key) {
        if (key == "type") read_string_into(j, type);
        else if (key == "id") read_string_into(j, id);
        else if (key == "name") read_string_into(j, name);
        else if (key == "text") has_text = capture(j, text);
        else if (key == "thinking") has_thinking = capture(j, thinking);
        else j.skip_value();
    });
    if (type == "tool_use" || type == "server_tool_use") {
        if (ToolCall* call = tool_or_reject(st, index, r)) {
            call->id.assign(id);
            call->name += name;
            r.tool_chars += count_code_points(name);
        }
    } else if (type == "text" && has_text) {
        JsonReader t(text);
        r.content_chars += append_string(t, st.text);
    } else if (type == "thinking" && has_thinking) {
        JsonReader t(thinking);
        r.reasoning_chars += append_string(t, st.reasoning_text);
    }
}

void read_block_delta(std::string_view raw, int64_t index, StreamState& st, EventResult& r) {
    JsonReader j(raw);
    if (j.peek() != Type::Object) return;
    std::string& type = st.scratch.subtype;
    type.clear();
    std::string_view value;
    bool has_value = false;
    json::each_member(j, [&](std::string_view key) {
        if (key == "type") read_string_into(j, type);
        else if (key == "text" || key == "thinking" || key == "partial_json") has_value = capture(j, value);
        else j.skip_value();  // signature_delta and citations carry no generated text
    });
    if (!has_value) return;
    JsonReader v(value);
    if (type == "text_delta") r.content_chars += append_string(v, st.text);
    else if (type == "thinking_delta") r.reasoning_chars += append_string(v, st.reasoning_text);
    else if (type == "input_json_delta") {
        if (ToolCall* call = tool_or_reject(st, index, r)) r.tool_chars += append_string(v, call->arguments);
    }
}

// message_delta's `delta`: the stop reason.
void read_message_delta(std::string_view raw, StreamState& st) {
    JsonReader j(raw);
    json::each_member(j, [&](std::string_view key) {
        if (key == "stop_reason" && j.peek() == Type::String) {
            j.read_string(st.replace_finish_reason());
        } else {
            j.skip_value();
        }
    });
}

}  // namespace

void extract_anthropic(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    // Keys may come in any order: capture, then act on the type.
    std::string& type = st.scratch.type;
    type.clear();
    std::string_view message, block, delta, usage;
    bool has_message = false, has_block = false, has_delta = false, has_usage = false;
    int64_t index = 0;
    const bool read = each_key(data, r, [&](JsonReader& j, std::string_view key) {
        if (key == "type") read_string_into(j, type);
        else if (key == "index") {
            if (!j.read_int(index)) j.skip_value();
        } else if (key == "message") has_message = capture(j, message);
        else if (key == "content_block") has_block = capture(j, block);
        else if (key == "delta") has_delta = capture(j, delta);
        else if (key == "usage") has_usage = capture(j, usage);
        else j.skip_value();
    });
    if (!read) return;
    if (type.empty()) type.assign(event_type.data(), event_type.size());

    if (type == "content_block_delta") {
        if (has_delta) read_block_delta(delta, index, st, r);
    } else if (type == "content_block_start") {
        if (has_block) read_block_start(block, index, st, r);
    } else if (type == "message_start") {
        if (has_message) read_message(message, st);
    } else if (type == "message_delta") {
        if (has_delta) read_message_delta(delta, st);
        if (has_usage) {
            JsonReader u(usage);
            read_usage(u, st.usage, nullptr);
        }
    } else if (type == "message_stop") {
        r.terminal = true;
    } else if (type == "error" || event_type == "error") {
        mark_error(data, r);
    }
}

}  // namespace pytps
