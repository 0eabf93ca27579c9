// Incremental Server-Sent Events parser following the WHATWG HTML "event stream
// interpretation" rules, fed bytes split anywhere.
//
// - Line ends, the BOM and the line bound: see LineSplitter.
// - A line starting with ':' is a comment and ignored. A line with no ':' is a field
//   whose value is empty. One space after the ':' is removed.
// - data: appended to the data buffer followed by "\n"; event: sets the event type;
//   id: sets the last event ID unless the value contains NUL (the ID persists across
//   events); retry: sets the reconnection time when the value is one or more ASCII
//   digits that fit in int64 (otherwise ignored); any other field is ignored.
// - A blank line dispatches: when the data buffer is empty nothing is dispatched and
//   the event type is reset; otherwise the final "\n" is dropped and the event is
//   delivered with type = event type or "message". Data and type reset afterwards.
// - An overlong line (LineSplitter) discards the event it belongs to: fields up to the
//   next blank line are ignored, and the sink's on_error is told.
//
// Bytes are passed through as they are; decoding to text (invalid UTF-8 -> U+FFFD) is
// left to the consumer, which gives the same result as decoding the stream first since
// every byte the parser acts on is ASCII.
//
// Sink interface (duck-typed, inlined):
//   void on_event(const SSEEventView&);
//   void on_error(const char* message);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/line_splitter.hpp"

namespace pytps {

struct SSEEventView {
    std::string_view type;     // "message" unless an event: field set it
    std::string_view data;     // data lines joined with "\n"
    std::string_view id;       // the last event ID in effect (persists across events)
    int64_t retry_ms;          // the reconnection time in effect, -1 when never set
};

class SSEParser {
public:
    static constexpr size_t kDefaultMaxLineBytes = size_t(16) << 20;

    explicit SSEParser(size_t max_line_bytes = kDefaultMaxLineBytes) : lines_(max_line_bytes) {}

    template <class Sink>
    void feed(const char* p, size_t n, Sink& sink) {
        lines_.feed(
            p, n, [&](std::string_view line, bool stable) { on_line(line, stable, sink); },
            [&] { on_overflow(sink); });
        // A pending event's data may still point into this chunk: own it before returning.
        if (data_is_view_) materialize();
    }

    // End of stream. Returns true when an incomplete event was discarded: data lines
    // were read since the last blank line, or the stream ended inside a line that is
    // not a comment. The parser is then back in its start state (ID and retry cleared).
    bool close();

    std::string_view last_event_id() const { return last_id_; }
    int64_t retry_ms() const { return retry_ms_; }
    size_t max_line_bytes() const { return lines_.max_line_bytes(); }

private:
    template <class Sink>
    void on_line(std::string_view line, bool stable, Sink& sink) {
        if (line.empty()) {
            dispatch(sink);
            return;
        }
        if (discarding_ || line[0] == ':') return;
        // Fast path for the line that carries nearly all traffic.
        if (line.size() >= 5 && std::memcmp(line.data(), "data:", 5) == 0) {
            std::string_view value = line.substr(5);
            if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
            append_data(value, stable, sink);
            return;
        }
        const size_t colon = line.find(':');
        std::string_view name = line.substr(0, colon);
        std::string_view value;
        if (colon != std::string_view::npos) {
            value = line.substr(colon + 1);
            if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
        }
        field(name, value, stable, sink);
    }

    template <class Sink>
    void field(std::string_view name, std::string_view value, bool stable, Sink& sink) {
        if (name == "data") {
            append_data(value, stable, sink);
        } else if (name == "event") {
            type_.assign(value.data(), value.size());
        } else if (name == "id") {
            if (value.find('\0') == std::string_view::npos) last_id_.assign(value.data(), value.size());
        } else if (name == "retry") {
            set_retry(value);
        }
    }

    template <class Sink>
    void append_data(std::string_view value, bool stable, Sink& sink) {
        // The event's data is bounded like a line, so memory stays bounded when a
        // stream sends endless data lines without a blank line.
        if (data_size() + value.size() + 1 > lines_.max_line_bytes()) {
            on_overflow(sink);
            return;
        }
        // Nearly every event is one data line inside one chunk: point at it, no copy.
        if (stable && data_.empty() && !data_is_view_) {
            data_view_ = value;
            data_is_view_ = true;
            return;
        }
        if (data_is_view_) materialize();
        data_.append(value.data(), value.size());
        data_.push_back('\n');
    }

    size_t data_size() const { return data_is_view_ ? data_view_.size() + 1 : data_.size(); }

    void materialize() {
        data_.assign(data_view_.data(), data_view_.size());
        data_.push_back('\n');
        data_is_view_ = false;
    }

    template <class Sink>
    void dispatch(Sink& sink) {
        const bool was_discarding = discarding_;
        discarding_ = false;
        if (was_discarding || (data_.empty() && !data_is_view_)) {
            data_.clear();
            data_is_view_ = false;
            type_.clear();
            return;
        }
        SSEEventView ev;
        ev.type = type_.empty() ? std::string_view("message") : std::string_view(type_);
        ev.data = data_is_view_ ? data_view_ : std::string_view(data_.data(), data_.size() - 1);
        data_is_view_ = false;
        ev.id = last_id_;
        ev.retry_ms = retry_ms_;
        sink.on_event(ev);
        data_.clear();
        type_.clear();
    }

    template <class Sink>
    void on_overflow(Sink& sink) {
        discarding_ = true;
        data_.clear();
        data_is_view_ = false;
        type_.clear();
        sink.on_error("SSE line or event longer than max_line_bytes; the event was discarded");
    }

    void set_retry(std::string_view value);

    LineSplitter lines_;
    std::string data_;
    std::string_view data_view_;  // the event's only data line, still in the caller's chunk
    bool data_is_view_ = false;
    std::string type_;
    std::string last_id_;
    int64_t retry_ms_ = -1;
    bool discarding_ = false;
};

}  // namespace pytps
