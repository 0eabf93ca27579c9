// The audio APIs' event streams: OpenAI's speech SSE (speech.audio.delta carrying base64 audio,
// speech.audio.done carrying usage) and streamed transcription, in OpenAI's shape
// (transcript.text.delta / transcript.text.done) and vLLM's (chat-completion-style chunks,
// object "transcription.chunk", read by the chat extractor).
//
// Speech deltas count audio BYTES in EventResult::content_chars (the base64 decoded length,
// computed from the text without decoding it): the recorder's per-event int32 is then the
// audio each event carried, which is what the player simulation needs.
#include "core/dialects.hpp"

namespace pytps {

using dialect_util::capture;
using dialect_util::check;
using dialect_util::done_marker;
using dialect_util::each_key;
using dialect_util::read_captured_usage;
using dialect_util::read_string_into;
using json::JsonReader;
using json::Type;

namespace {

// Decoded bytes of a base64 text (standard alphabet, padded or not); false when its length
// cannot be base64 or a character is outside the alphabet.
bool base64_decoded_size(std::string_view s, size_t& out) {
    size_t pad = 0;
    while (!s.empty() && s.back() == '=' && pad < 2) {
        s.remove_suffix(1);
        ++pad;
    }
    for (const char c : s) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                        c == '/' || c == '-' || c == '_';
        if (!ok) return false;
    }
    if (s.size() % 4 == 1) return false;
    out = s.size() / 4 * 3 + (s.size() % 4 == 0 ? 0 : s.size() % 4 - 1);
    return true;
}

}  // namespace

void extract_speech_sse(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    if (done_marker(data, r)) return;
    std::string& type = st.scratch.type;
    type.clear();
    std::string_view audio, usage;
    bool has_audio = false, has_usage = false;
    const bool read = each_key(data, r, [&](JsonReader& j, std::string_view key) {
        if (key == "type") read_string_into(j, type);
        else if (key == "audio" && j.peek() == Type::String) has_audio = j.read_raw_string(audio);
        else if (key == "usage") has_usage = capture(j, usage);
        else if (key == "error") {
            j.skip_value();
            type = "error";
        } else j.skip_value();
    });
    if (!read) return;
    if (type.empty()) type.assign(event_type.data(), event_type.size());
    if (type == "speech.audio.delta") {
        size_t bytes = 0;
        if (has_audio && !base64_decoded_size(audio, bytes)) {
            r.malformed = "speech.audio.delta's audio is not base64";
            return;
        }
        r.content_chars += bytes;
    } else if (type == "speech.audio.done") {
        if (has_usage && !read_captured_usage(usage, st, r)) return;
        r.terminal = true;
    } else if (type == "error") {
        dialect_util::mark_error(data, r);
        r.terminal = true;
    }
}

void extract_transcription(std::string_view event_type, std::string_view data, StreamState& st, EventResult& r) {
    if (done_marker(data, r)) return;
    std::string& type = st.scratch.type;
    type.clear();
    std::string_view delta, text, usage;
    bool has_type = false, has_delta = false, has_text = false, has_usage = false, has_error = false;
    const bool read = each_key(data, r, [&](JsonReader& j, std::string_view key) {
        if (key == "type") has_type = (read_string_into(j, type), true);
        else if (key == "delta") has_delta = capture(j, delta);
        else if (key == "text") has_text = capture(j, text);
        else if (key == "usage") has_usage = capture(j, usage);
        else if (key == "error") has_error = (j.skip_value(), true);
        else j.skip_value();
    });
    if (!read) return;
    if (!has_type && event_type != "transcript.text.delta" && event_type != "transcript.text.done") {
        // vLLM's shape: chat-completion chunks (choices[].delta.content), errors as OpenAI's.
        if (has_error) {
            dialect_util::mark_error(data, r);
            return;
        }
        extract_openai_chat(event_type, data, st, r);
        return;
    }
    if (type.empty()) type.assign(event_type.data(), event_type.size());
    if (type == "transcript.text.delta") {
        JsonReader d(has_delta ? delta : std::string_view("null"));
        r.content_chars += dialect_util::append_string(d, st.text);
        if (!check(d, r)) return;
    } else if (type == "transcript.text.done") {
        // The whole transcript again: it counts only when no delta carried it.
        if (st.text.empty() && has_text) {
            JsonReader t(text);
            r.content_chars += dialect_util::append_string(t, st.text);
            if (!check(t, r)) return;
        }
        if (has_usage && !read_captured_usage(usage, st, r)) return;
        r.terminal = true;
    } else if (type == "error" || has_error) {
        dialect_util::mark_error(data, r);
        r.terminal = true;
    }
}

}  // namespace pytps
