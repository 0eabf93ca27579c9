// What a response stream has reported so far, and what one event contributed.
// The dialect extractors (dialects.hpp) write these; the StreamRecorder times them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/json_scan.hpp"

namespace pytps {

enum OutputKind : uint8_t { kContent = 0, kReasoning = 1, kTool = 2 };

// Usage under normalized names; -1 where the server did not report the field.
struct Usage {
    int64_t prompt_tokens = -1;
    int64_t completion_tokens = -1;
    int64_t total_tokens = -1;
    int64_t reasoning_tokens = -1;
    int64_t cached_tokens = -1;
};

struct ToolCall {
    int64_t index = 0;
    std::string id;
    std::string name;
    std::string arguments;
};

struct StreamError {
    bool present = false;
    std::string kind;     // "in_stream" or "protocol"
    std::string message;
    std::string payload;  // the event's data for in-stream errors
    bool has_payload = false;
    int64_t event_index = -1;
};

// The validated head that consecutive events of a stream share (OpenAI chunks repeat
// id, object, created and model in every event): an event that starts with the same
// bytes resumes parsing after them. Only keys without per-event effects may be in it.
struct PrefixCache {
    std::string prefix;
    json::Checkpoint checkpoint;
    bool valid = false;

    bool matches(std::string_view data) const {
        if (!valid || data.size() <= prefix.size() ||
            std::memcmp(data.data(), prefix.data(), prefix.size()) != 0)
            return false;
        // The prefix ends right after a value. Strings and literals end themselves, but a
        // number could go on ("created":1 vs "created":12): then it is another value.
        const char next = data[prefix.size()];
        return !((next >= '0' && next <= '9') || next == '.' || next == 'e' || next == 'E' || next == '+' ||
                 next == '-');
    }
    void store(std::string_view data, const json::Checkpoint& cp) {
        prefix.assign(data.data(), cp.offset);
        checkpoint = cp;
        valid = true;
    }
};

// The whole shape of the stream's plain text events: head + one JSON string + tail
// (`{..."delta":{"content":` + `" word"` + `},"logprobs":null,"finish_reason":null}]}`).
// An event made of the same head and tail around any valid JSON string token parses to
// exactly the same effects as the event it was learnt from, except for the text; so the
// head and tail are compared and only the string is read. Learnt only from an event
// whose sole effect was that one text value.
struct ShapeCache {
    std::string head;
    std::string tail;
    bool valid = false;

    void store(std::string_view data, size_t value_begin, size_t value_end) {
        head.assign(data.data(), value_begin);
        tail.assign(data.data() + value_end, data.size() - value_end);
        valid = true;
    }
};

// Work the recorder did, for tests that check its cost by counting rather than timing.
// Plain increments on paths that already do far more; never read by the recorder itself.
struct WorkCounters {
    uint64_t shape_hits = 0;   // events read by the ShapeCache fast path
    uint64_t prefix_hits = 0;  // events that resumed after the PrefixCache head
    uint64_t tool_probes = 0;  // entries looked at to find a tool call by its index
};

struct StreamState {
    WorkCounters counters;
    PrefixCache prefix_cache;
    ShapeCache shape_cache;
    std::string text;
    std::string reasoning_text;
    std::vector<ToolCall> tool_calls;
    Usage usage;
    std::string finish_reason;
    bool has_finish_reason = false;
    std::string response_id;
    std::string model;
    bool done = false;

    // The tool call with this index, created on first use (indexes arrive in order
    // in practice; a linear search over a handful of calls is cheapest).
    ToolCall& tool(int64_t index) {
        for (auto& t : tool_calls) {
            ++counters.tool_probes;
            if (t.index == index) return t;
        }
        tool_calls.push_back(ToolCall{index, {}, {}, {}});
        return tool_calls.back();
    }
};

// What one event produced. Chars are Unicode code points of text appended to the state.
struct EventResult {
    size_t content_chars = 0;
    size_t reasoning_chars = 0;
    size_t tool_chars = 0;
    int64_t cumulative_completion_tokens = -1;  // usage.completion_tokens carried by this event
    bool terminal = false;
    const char* malformed = nullptr;  // why the event could not be read, or null
    // For ShapeCache: how many values changed the state, and where the text value was.
    int effects = 0;
    size_t text_value_begin = 0;
    size_t text_value_end = 0;
    bool in_stream_error = false;
    std::string error_message;

    void reset() {
        content_chars = reasoning_chars = tool_chars = 0;
        cumulative_completion_tokens = -1;
        terminal = false;
        malformed = nullptr;
        in_stream_error = false;
        error_message.clear();
        effects = 0;
        text_value_begin = text_value_end = 0;
    }

    bool output_bearing() const { return content_chars + reasoning_chars + tool_chars > 0; }
    OutputKind kind() const {
        // Content wins over reasoning over tool when one event carries several.
        if (content_chars) return kContent;
        if (reasoning_chars) return kReasoning;
        return kTool;
    }
};

}  // namespace pytps
