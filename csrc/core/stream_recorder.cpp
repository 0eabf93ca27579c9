#include "core/stream_recorder.hpp"

#include <cstdint>

namespace pytps {

namespace {

using Extractor = void (*)(std::string_view, std::string_view, StreamState&, EventResult&);

Extractor extractor_for(Dialect d) {
    switch (d) {
        case Dialect::OpenAIChat: return &extract_openai_chat;
        case Dialect::OpenAICompletions: return &extract_openai_completions;
        case Dialect::OpenAIResponses: return &extract_openai_responses;
        case Dialect::Anthropic: return &extract_anthropic;
        case Dialect::Ollama: return &extract_ollama;
        case Dialect::Json: return nullptr;  // never called: the body is kept whole
        case Dialect::SpeechPcm:
        case Dialect::SpeechWav:
        case Dialect::SpeechCoded: return nullptr;  // never called: every read is audio
        case Dialect::SpeechSse: return &extract_speech_sse;
        case Dialect::Transcription: return &extract_transcription;
    }
    return &extract_openai_chat;
}

bool is_blank(std::string_view line) {
    for (const char c : line)
        if (c != ' ' && c != '\t') return false;
    return true;
}

}  // namespace

StreamRecorder::StreamRecorder(Dialect dialect, size_t max_line_bytes)
    : dialect_(dialect),
      extract_(extractor_for(dialect)),
      sse_(max_line_bytes),
      ndjson_(max_line_bytes),
      audio_(dialect == Dialect::SpeechWav) {}

void StreamRecorder::feed_raw_audio(const char* data, size_t n) {
    if (n == 0) return;
    if (first_body_ns_ == kNoTime) first_body_ns_ = now_ns_;
    // A compressed body is kept whole: its seconds are the decoder's (Python), read by read.
    if (dialect_ == Dialect::SpeechCoded) body_.append(data, n);
    const bool had_error = audio_.error() != nullptr;
    size_t bytes = audio_.feed(data, n);
    if (!had_error && audio_.error()) record_protocol_error(audio_.error());
    // One event per read: the audio it carried (int32 per event; a larger read is split into
    // events of the same stamp, which never happens with socket-sized reads).
    while (bytes > 0) {
        const size_t part = bytes > static_cast<size_t>(INT32_MAX) ? static_cast<size_t>(INT32_MAX) : bytes;
        ++events_;
        times_.push_back(now_ns_);
        kinds_.push_back(kContent);
        chars_.push_back(static_cast<int32_t>(part));
        tokens_.push_back(-1);
        if (first_answer_ns_ == kNoTime) first_answer_ns_ = now_ns_;
        bytes -= part;
    }
}

size_t StreamRecorder::feed(const char* data, size_t n, int64_t t_ns) {
    if (closed_) return 0;
    now_ns_ = t_ns;
    const size_t before = times_.size();
    if (dialect_ == Dialect::Json) {
        body_.append(data, n);
    } else if (dialect_is_raw_audio(dialect_)) {
        feed_raw_audio(data, n);
    } else if (dialect_uses_sse(dialect_)) {
        sse_.feed(data, n, *this);
    } else {
        ndjson_.feed(
            data, n,
            [this](std::string_view line, bool) {
                if (!is_blank(line)) handle_event(std::string_view(), line);
            },
            [this] { record_protocol_error("NDJSON line longer than max_line_bytes"); });
    }
    return times_.size() - before;
}

void StreamRecorder::handle_event(std::string_view type, std::string_view data) {
    const int64_t index = events_++;
    result_.reset();

    state_.begin_event();
    extract_(type, data, state_, result_);

    // The per-event read-outs are int32: counts that do not fit are refused, not narrowed
    // (docs/sse.md, "What the recorder refuses").
    const size_t chars = result_.content_chars + result_.reasoning_chars + result_.tool_chars;
    int64_t tokens = -1;
    if (!result_.malformed && !result_.rejected && chars > 0) {
        if (chars > static_cast<size_t>(INT32_MAX)) result_.rejected = "more than 2^31-1 characters in one event";
        if (result_.cumulative_completion_tokens >= 0) {
            // Both counts are in [0, INT64_MAX], so the difference cannot overflow.
            tokens = result_.cumulative_completion_tokens - last_completion_tokens_;
            if (tokens > INT32_MAX || tokens < INT32_MIN)
                result_.rejected = "the event's completion token count (usage minus the previous report) does not fit int32";
        }
    }
    if (result_.malformed || result_.rejected) {
        state_.rollback();
        ++protocol_errors_;
        if (!error_.present) {
            record_error("protocol",
                         result_.malformed
                             ? std::string("malformed JSON in event ") + std::to_string(index) + ": " + result_.malformed
                             : std::string("event ") + std::to_string(index) + " rejected: " + result_.rejected,
                         data, true);
            error_.event_index = index;
        }
        return;
    }
    if (result_.in_stream_error && !error_.present) {
        record_error("in_stream", result_.error_message, data, true);
        error_.event_index = index;
    }
    if (chars > 0) {
        const OutputKind kind = result_.kind();
        times_.push_back(now_ns_);
        kinds_.push_back(kind);
        chars_.push_back(static_cast<int32_t>(chars));
        tokens_.push_back(static_cast<int32_t>(tokens));
        if (kind != kReasoning && first_answer_ns_ == kNoTime) first_answer_ns_ = now_ns_;
    }
    if (result_.cumulative_completion_tokens >= 0) last_completion_tokens_ = result_.cumulative_completion_tokens;
    if (result_.terminal && !state_.done) {
        state_.done = true;
        end_ns_ = now_ns_;
    }
}

void StreamRecorder::record_error(const char* kind, std::string message, std::string_view payload, bool has_payload) {
    error_.present = true;
    error_.kind = kind;
    error_.message = std::move(message);
    error_.has_payload = has_payload;
    if (has_payload) error_.payload.assign(payload.data(), payload.size());
    error_.event_index = events_;
}

void StreamRecorder::record_protocol_error(const char* message) {
    ++protocol_errors_;
    if (!error_.present) record_error("protocol", message, std::string_view(), false);
}

void StreamRecorder::close(int64_t t_ns) {
    if (closed_) return;
    closed_ = true;
    if (dialect_ == Dialect::Json) {
        // A whole body, framed by HTTP: it ended when its last byte came (a body cut short is
        // the HTTP parser's error). Whether it says what it should is for the reader of body().
        state_.done = !body_.empty();
        end_ns_ = t_ns;
        return;
    }
    if (dialect_is_raw_audio(dialect_)) {
        // A raw body ends when HTTP says so (a body cut short is the HTTP parser's error): whole
        // when some audio came and the header, if any, could be read.
        state_.done = !times_.empty() && audio_.error() == nullptr;
        end_ns_ = t_ns;
        return;
    }
    if (dialect_uses_sse(dialect_)) {
        if (sse_.close()) record_protocol_error("the stream ended inside an event");
    } else {
        // NDJSON: a last object without its newline is still whole; it is taken as an event
        // stamped with the chunk that delivered its last byte.
        const std::string line(ndjson_.partial());
        ndjson_.reset();
        if (!is_blank(line)) handle_event(std::string_view(), line);
    }
    if (!state_.done) end_ns_ = t_ns;
}

void StreamRecorder::reset() {
    body_.clear();
    audio_.reset();
    first_body_ns_ = kNoTime;
    sse_.close();
    ndjson_.reset();
    now_ns_ = kNoTime;
    state_ = StreamState{};
    error_ = StreamError{};
    times_.clear();
    kinds_.clear();
    chars_.clear();
    tokens_.clear();
    first_answer_ns_ = kNoTime;
    end_ns_ = kNoTime;
    events_ = 0;
    protocol_errors_ = 0;
    last_completion_tokens_ = 0;
    closed_ = false;
}

}  // namespace pytps
