// StreamRecorder: the per-request hot path. It frames one response body (SSE or
// NDJSON), hands each event to its dialect's extractor, and stamps every output-bearing
// event with the arrival time of the chunk that completed it.
//
// Timestamps are never taken here: the caller stamps each read (as close to the socket
// as it can) and passes the stamp with the bytes. Everything below is arithmetic-free
// bookkeeping, so the recorder adds no time of its own to what it records.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/audio_body.hpp"
#include "core/dialects.hpp"
#include "core/line_splitter.hpp"
#include "core/sse_parser.hpp"
#include "core/stream_state.hpp"

namespace pytps {

class StreamRecorder {
public:
    static constexpr int64_t kNoTime = INT64_MIN;

    explicit StreamRecorder(Dialect dialect, size_t max_line_bytes = SSEParser::kDefaultMaxLineBytes);

    // Consumes one chunk read at t_ns; returns the output-bearing events it completed.
    size_t feed(const char* data, size_t n, int64_t t_ns);
    // End of the body at t_ns. Idempotent: only the first call counts.
    void close(int64_t t_ns);
    void reset();

    Dialect dialect() const { return dialect_; }
    bool closed() const { return closed_; }

    // Per output-bearing event, in arrival order.
    const std::vector<int64_t>& output_times_ns() const { return times_; }
    const std::vector<uint8_t>& output_kinds() const { return kinds_; }
    const std::vector<int32_t>& output_chars() const { return chars_; }
    const std::vector<int32_t>& output_tokens() const { return tokens_; }

    int64_t first_output_ns() const { return times_.empty() ? kNoTime : times_.front(); }
    int64_t first_answer_ns() const { return first_answer_ns_; }
    int64_t last_output_ns() const { return times_.empty() ? kNoTime : times_.back(); }
    int64_t end_ns() const { return end_ns_; }

    const StreamState& state() const { return state_; }
    const StreamError& error() const { return error_; }
    int64_t events() const { return events_; }
    int64_t protocol_errors() const { return protocol_errors_; }
    // Dialect::Json and SpeechCoded: the whole body as it came (empty for the other dialects).
    const std::string& body() const { return body_; }
    // The raw audio dialects: the format a WAV header stated (zeros for PCM), and the stamp of
    // the first read that carried any byte of the body (header included).
    const AudioFormat& audio_format() const { return audio_.format(); }
    int64_t first_body_ns() const { return first_body_ns_; }

    // SSE parser sink.
    void on_event(const SSEEventView& ev) { handle_event(ev.type, ev.data); }
    void on_error(const char* message) { record_protocol_error(message); }

private:
    void handle_event(std::string_view type, std::string_view data);
    void record_protocol_error(const char* message);
    void record_error(const char* kind, std::string message, std::string_view payload, bool has_payload);

    Dialect dialect_;
    void (*extract_)(std::string_view, std::string_view, StreamState&, EventResult&);
    SSEParser sse_;
    LineSplitter ndjson_;

    int64_t now_ns_ = kNoTime;  // stamp of the chunk being fed
    StreamState state_;
    EventResult result_;  // reused per event
    StreamError error_;
    std::vector<int64_t> times_;
    std::vector<uint8_t> kinds_;
    std::vector<int32_t> chars_;
    std::vector<int32_t> tokens_;
    int64_t first_answer_ns_ = kNoTime;
    int64_t end_ns_ = kNoTime;
    int64_t events_ = 0;
    int64_t protocol_errors_ = 0;
    int64_t last_completion_tokens_ = 0;  // for per-event token counts from cumulative usage
    bool closed_ = false;
    std::string body_;  // Dialect::Json and SpeechCoded only
    AudioBodyScanner audio_;  // the raw audio dialects only
    int64_t first_body_ns_ = kNoTime;

    void feed_raw_audio(const char* data, size_t n);
};

}  // namespace pytps
