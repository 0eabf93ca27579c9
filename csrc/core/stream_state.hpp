// What a response stream has reported so far, and what one event contributed.
// The dialect extractors (dialects.hpp) write these; the StreamRecorder times them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
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
    std::string id;  // assigned (a later delta may replace it); name and arguments are appended to
    std::string name;
    std::string arguments;
    uint64_t journaled = 0;  // StreamState::Undo::serial of the last event that saved it
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
    uint64_t stores = 0;  // so that a rejected event's store can be undone

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
        ++stores;
    }
};

// The whole shape of the stream's plain text events: head + one JSON string + tail
// (`{..."delta":{"content":` + `" word"` + `},"logprobs":null,"finish_reason":null}]}`).
// An event made of the same head and tail around any valid JSON string token parses to
// exactly the same effects as the event it was learnt from, except for the text; so the
// head and tail are compared and only the string is read. Learnt from every event that
// the fast path did not read and whose sole effect was one text value (content, text or
// refusal: all three append to StreamState::text), so a stream whose shape changes (a
// refusal, then content) is soon on the fast path again.
struct ShapeCache {
    std::string head;
    std::string tail;
    bool valid = false;
    uint64_t stores = 0;  // so that a rejected event's store can be undone

    void store(std::string_view data, size_t value_begin, size_t value_end) {
        head.assign(data.data(), value_begin);
        tail.assign(data.data() + value_end, data.size() - value_end);
        valid = true;
        ++stores;
    }
};

// Work the recorder did, for tests that check its cost by counting rather than timing.
// Plain increments on paths that already do far more; never read by the recorder itself.
struct WorkCounters {
    uint64_t shape_hits = 0;   // events read by the ShapeCache fast path
    uint64_t prefix_hits = 0;  // events that resumed after the PrefixCache head
    uint64_t tool_probes = 0;  // entries looked at to find a tool call by its index
};

// More tool calls than this in one stream is hostile (real streams have a handful): the
// event that would open one more is rejected as a protocol error.
constexpr size_t kMaxToolCalls = 1024;

// Tool call index -> position in StreamState::tool_calls. Indexes are the server's (any
// int64): those in [0, kDenseIndexes) by direct lookup, others by binary search over a
// sorted vector, so a lookup looks at 1 or O(log n) entries. Memory is bounded by
// kMaxToolCalls entries in each.
class ToolIndex {
public:
    static constexpr int64_t kDenseIndexes = static_cast<int64_t>(kMaxToolCalls);

    // The position of the call with this index, or -1; adds the entries looked at to probes.
    int32_t find(int64_t index, uint64_t& probes) const;
    void insert(int64_t index, int32_t position);
    void erase(int64_t index);

private:
    // First entry of sparse_ whose index is not less than `index`.
    size_t lower_bound(int64_t index, uint64_t& probes) const;

    std::vector<int32_t> dense_;                         // [index] -> position or -1
    std::vector<std::pair<int64_t, int32_t>> sparse_;    // sorted by index
};

struct StreamState {
    WorkCounters counters;
    PrefixCache prefix_cache;
    ShapeCache shape_cache;
    std::string text;
    std::string reasoning_text;
    std::vector<ToolCall> tool_calls;  // in order of first appearance
    Usage usage;
    std::string finish_reason;
    bool has_finish_reason = false;
    std::string response_id;  // set once (only while empty)
    std::string model;        // set once (only while empty)
    bool done = false;
    // The server's own timing report of this request (llama.cpp `timings`, Ollama's final
    // durations, ...): the raw JSON object text of the last report, and who defines its fields
    // (a string literal: "llama.cpp", "ollama", "groq", "cerebras"; null when none came).
    // Read out once per request in Python (pytps/server_timings.py): never per token.
    std::string server_timings;
    const char* server_timings_source = nullptr;

    // Buffers an extractor may use for the strings it reads per event (an event type
    // such as "response.output_text.delta" is too long for the small-string buffer),
    // so that the steady state allocates nothing. Not part of the state.
    struct Scratch {
        std::string type, subtype;
    } scratch;

    // The tool call with this index, created on first use; null when that would make more
    // than kMaxToolCalls (the caller rejects the event). Saves the call's undo record.
    ToolCall* tool(int64_t index);
    // finish_reason cleared for the caller to read the new value into; sets has_finish_reason.
    std::string& replace_finish_reason();
    // server_timings cleared for the caller to fill; sets the source. Saved for rollback.
    std::string& replace_server_timings(const char* source);

    // Every event is bracketed: begin_event() before the extractor runs, and rollback()
    // if the event is rejected (malformed JSON, a limit), which takes back every change it
    // made: appended text by length, assigned values from the undo record, tool calls it
    // opened, and what the caches learnt from it. The undo record's buffers are reused, so
    // after the first few events this allocates nothing.
    void begin_event();
    void rollback();

private:
    struct Undo {
        uint64_t serial = 0;  // of the event in progress
        size_t text = 0, reasoning = 0, tools = 0;
        Usage usage;
        bool has_finish_reason = false;
        bool finish_saved = false;  // finish_reason holds the value before the event
        std::string finish_reason;
        bool had_response_id = false, had_model = false;
        bool timings_saved = false;  // server_timings(_source) hold the values before the event
        std::string server_timings;
        const char* server_timings_source = nullptr;
        uint64_t prefix_stores = 0, shape_stores = 0;
        struct Tool {
            size_t position, name, arguments;
            std::string id;
        };
        std::vector<Tool> touched;  // tool calls from before the event that it changed
        size_t n_touched = 0;       // (entries past it are spare, kept for their buffers)
    };

    ToolIndex tool_index_;
    Undo undo_;
};

// What one event produced. Chars are Unicode code points of text appended to the state.
struct EventResult {
    size_t content_chars = 0;
    size_t reasoning_chars = 0;
    size_t tool_chars = 0;
    int64_t cumulative_completion_tokens = -1;  // usage.completion_tokens carried by this event
    bool terminal = false;
    const char* malformed = nullptr;  // why the event could not be read, or null
    const char* rejected = nullptr;   // why a readable event is refused (a limit), or null
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
        rejected = nullptr;
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
