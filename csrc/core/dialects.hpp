// Stream dialects: how each API's events say what was generated.
//
// One extractor per API (dialect_openai.cpp, dialect_anthropic.cpp, dialect_ollama.cpp).
// An extractor reads one event's data (JSON), appends generated text to the StreamState
// and says in the EventResult what the event carried. It never throws: malformed JSON
// is reported through EventResult::malformed and the recorder moves on.
#pragma once

#include <string>
#include <string_view>

#include "core/dialect_table.hpp"
#include "core/json_scan.hpp"
#include "core/stream_state.hpp"

namespace pytps {

// event_type is the SSE event: field ("message" by default; empty for NDJSON).
void extract_openai_chat(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);
void extract_openai_completions(std::string_view event_type, std::string_view data, StreamState& st,
                                EventResult& r);
void extract_openai_responses(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);
void extract_anthropic(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);
void extract_ollama(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);
// The audio APIs (dialect_audio.cpp): speech deltas count decoded audio bytes as content chars.
void extract_speech_sse(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);
void extract_transcription(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r);

// Shared by the extractors (dialect_common.cpp).
namespace dialect_util {

// Code points in valid UTF-8 (every decoded string is): the bytes that do not continue one.
size_t count_code_points(std::string_view s);

// Reads a JSON string value (or null) and appends it to dest; returns the code points
// appended. A value of another type is skipped and counts nothing.
size_t append_string(json::JsonReader& r, std::string& dest);

// Reads a string value into out (replacing it); null or another type leaves out empty.
void read_string_into(json::JsonReader& r, std::string& out);

// The raw text of the next value (validated), for a second look once the type is known.
bool capture(json::JsonReader& r, std::string_view& raw);

// Reads a usage object in any of the APIs' namings into st.usage. Returns false on
// malformed JSON. Sets *completion to the completion/output tokens it carried, if any.
bool read_usage(json::JsonReader& r, Usage& usage, int64_t* completion);

// The human message of an error payload: error.message, message, or error as a string.
std::string error_message(std::string_view data);

// Marks the event as an in-stream error carrying data as its payload.
void mark_error(std::string_view data, EventResult& r);

// The tool call with this index (see StreamState::tool), or null with the event rejected
// when the stream already has kMaxToolCalls.
inline ToolCall* tool_or_reject(StreamState& st, int64_t index, EventResult& r) {
    static_assert(kMaxToolCalls == 1024, "the message below names the limit");
    ToolCall* call = st.tool(index);
    if (!call) r.rejected = "more than 1024 tool calls in one stream";
    return call;
}

// Sets r.malformed from the reader's error when it failed.
inline bool check(const json::JsonReader& r, EventResult& res) {
    if (r.failed()) {
        res.malformed = r.error();
        return false;
    }
    return true;
}

// True when data is the stream's [DONE] marker, with the event marked terminal.
inline bool done_marker(std::string_view data, EventResult& r) {
    if (data != "[DONE]") return false;
    r.terminal = true;
    return true;
}

// Reads one event's JSON object, handing each key to on_key(j, key), which reads or skips its
// value (keys may come in any order: the extractors capture, then act on the type). False, with
// r.malformed set, when data is not one valid object.
template <class OnKey>
bool each_key(std::string_view data, EventResult& r, OnKey&& on_key) {
    json::JsonReader j(data);
    if (!j.begin_object()) {
        check(j, r);
        return false;
    }
    std::string_view key;
    while (j.next_key(key)) on_key(j, key);
    if (!j.finish()) {
        check(j, r);
        return false;
    }
    return true;
}

// Reads a captured usage object into st.usage; false, with r.malformed set, when it is malformed.
inline bool read_captured_usage(std::string_view usage, StreamState& st, EventResult& r) {
    json::JsonReader u(usage);
    int64_t completion = -1;
    if (!read_usage(u, st.usage, &completion)) {
        check(u, r);
        return false;
    }
    return true;
}

}  // namespace dialect_util
}  // namespace pytps
