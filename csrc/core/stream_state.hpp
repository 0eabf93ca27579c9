// What a response stream has reported so far, and what one event contributed.
// The dialect extractors (dialects.hpp) write these; the StreamRecorder times them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

struct StreamState {
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
        for (auto& t : tool_calls)
            if (t.index == index) return t;
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
    bool in_stream_error = false;
    std::string error_message;

    bool output_bearing() const { return content_chars + reasoning_chars + tool_chars > 0; }
    OutputKind kind() const {
        // Content wins over reasoning over tool when one event carries several.
        if (content_chars) return kContent;
        if (reasoning_chars) return kReasoning;
        return kTool;
    }
};

}  // namespace pytps
