// Differential fuzzer for pytps::StreamRecorder: the same body fed whole, split in two at a
// fuzzer-chosen point, and one byte at a time must give the same read-outs (text, kinds,
// chars, tokens, usage, ids, tool calls, errors, events), and every event's time must be the
// stamp of a chunk that was fed, never decreasing. Sanitizers check the memory side.
//
// Rollback: the body's events are framed and written out again plainly; a malformed copy
// of event j (its data + " x", which no JSON reader accepts) put before event k must change
// nothing but the event and error counts: a rejected event leaves the recorder as it was.
//
// Input: byte 0 picks the dialect, bytes 1-2 the split point, the rest is the body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/line_splitter.hpp"
#include "core/sse_parser.hpp"
#include "core/stream_recorder.hpp"

namespace {

using pytps::StreamRecorder;

struct Readout {
    std::string text, reasoning, finish, id, model, error_kind;
    std::vector<std::string> tools;  // index, id, name and arguments of each call, in order
    std::vector<uint8_t> kinds;
    std::vector<int32_t> chars, tokens;
    int64_t prompt, completion, total, reasoning_tokens, cached;
    int64_t events, protocol_errors, error_index;
    bool done;
    bool operator==(const Readout& o) const {
        return text == o.text && reasoning == o.reasoning && finish == o.finish && id == o.id && model == o.model &&
               error_kind == o.error_kind && kinds == o.kinds && chars == o.chars && tokens == o.tokens &&
               prompt == o.prompt && completion == o.completion && total == o.total &&
               reasoning_tokens == o.reasoning_tokens && cached == o.cached && events == o.events &&
               protocol_errors == o.protocol_errors && error_index == o.error_index && tools == o.tools &&
               done == o.done;
    }
};

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "recorder fuzz: %s\n", what);
    std::abort();
}

// Strict UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int n;
        uint32_t cp;
        if (c < 0x80) { ++i; continue; }
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return false;
        for (int k = 1; k <= n; ++k) {
            if (i + k >= s.size()) return false;
            const unsigned char b = static_cast<unsigned char>(s[i + k]);
            if ((b & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (b & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += static_cast<size_t>(n) + 1;
    }
    return true;
}

Readout run(pytps::Dialect d, const std::string& body, const std::vector<size_t>& cuts) {
    StreamRecorder rec(d, 4096);
    std::vector<int64_t> stamps;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        std::vector<char> chunk(body.begin() + static_cast<long>(cuts[i]), body.begin() + static_cast<long>(cuts[i + 1]));
        const int64_t t = static_cast<int64_t>(cuts[i + 1]);  // a chunk's stamp: where it ends
        stamps.push_back(t);
        rec.feed(chunk.data(), chunk.size(), t);
    }
    rec.close(static_cast<int64_t>(body.size()) + 1);
    const auto& times = rec.output_times_ns();
    for (size_t i = 0; i < times.size(); ++i) {
        if (i && times[i] < times[i - 1]) fail("output times decrease");
        bool fed = false;
        for (int64_t s : stamps) fed = fed || s == times[i];
        if (!fed) fail("an output time that no chunk carried");
    }
    if (rec.output_kinds().size() != times.size() || rec.output_chars().size() != times.size() ||
        rec.output_tokens().size() != times.size())
        fail("read-out arrays of different lengths");
    const auto& st = rec.state();
    Readout r;
    r.text = st.text;
    r.reasoning = st.reasoning_text;
    r.finish = st.has_finish_reason ? st.finish_reason : "<none>";
    r.id = st.response_id;
    r.model = st.model;
    r.error_kind = rec.error().present ? rec.error().kind : "";
    r.error_index = rec.error().event_index;
    r.kinds = rec.output_kinds();
    r.chars = rec.output_chars();
    r.tokens = rec.output_tokens();
    r.prompt = st.usage.prompt_tokens;
    r.completion = st.usage.completion_tokens;
    r.total = st.usage.total_tokens;
    r.reasoning_tokens = st.usage.reasoning_tokens;
    r.cached = st.usage.cached_tokens;
    r.events = rec.events();
    r.protocol_errors = rec.protocol_errors();
    if (st.tool_calls.size() > pytps::kMaxToolCalls) fail("more tool calls than kMaxToolCalls");
    for (const auto& t : st.tool_calls)
        r.tools.push_back(std::to_string(t.index) + '\0' + t.id + '\0' + t.name + '\0' + t.arguments);
    r.done = st.done;
    for (const std::string* text : {&st.text, &st.reasoning_text, &st.finish_reason, &st.response_id, &st.model})
        if (!valid_utf8(*text)) fail("a decoded string is not valid UTF-8");
    for (const auto& t : st.tool_calls)
        if (!valid_utf8(t.id) || !valid_utf8(t.name) || !valid_utf8(t.arguments)) fail("tool text is not valid UTF-8");
    return r;
}

struct Framed {
    std::string type, data;
};

// The events a body holds, as the recorder frames them (bounds large enough for any input).
std::vector<Framed> frame(pytps::Dialect d, const std::string& body) {
    std::vector<Framed> out;
    if (pytps::dialect_uses_sse(d)) {
        struct Sink {
            std::vector<Framed>* out;
            void on_event(const pytps::SSEEventView& ev) {
                out->push_back({std::string(ev.type), std::string(ev.data)});
            }
            void on_error(const char*) {}
        } sink{&out};
        pytps::SSEParser p(1 << 20);
        p.feed(body.data(), body.size(), sink);
        p.close();
    } else {
        auto blank = [](std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; };
        pytps::LineSplitter lines(1 << 20);
        lines.feed(
            body.data(), body.size(),
            [&](std::string_view line, bool) {
                if (!blank(line)) out.push_back({"", std::string(line)});
            },
            [] {});
        if (!blank(lines.partial())) out.push_back({"", std::string(lines.partial())});
    }
    return out;
}

// The events written out plainly: event:/data: lines, or one line each for NDJSON.
std::string unframe(pytps::Dialect d, const std::vector<Framed>& events) {
    std::string out;
    for (const auto& e : events) {
        if (!pytps::dialect_uses_sse(d)) {
            out += e.data + "\n";
            continue;
        }
        if (e.type != "message") out += "event: " + e.type + "\n";
        size_t start = 0;
        for (;;) {
            const size_t nl = e.data.find('\n', start);
            out += "data: " + e.data.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
            if (nl == std::string::npos) break;
            start = nl + 1;
        }
        out += "\n";
    }
    return out;
}

void check_rollback(pytps::Dialect d, const std::string& body, size_t seed) {
    std::vector<Framed> events = frame(d, body);
    if (events.empty() || events.size() > 256) return;
    const std::string plain = unframe(d, events);
    Readout clean = run(d, plain, {0, plain.size()});
    const size_t k = seed % (events.size() + 1), j = (seed / 7) % events.size();
    Framed bad = events[j];
    bad.data += " x";
    events.insert(events.begin() + static_cast<long>(k), bad);
    const std::string noisy_body = unframe(d, events);
    Readout noisy = run(d, noisy_body, {0, noisy_body.size()});
    if (noisy.protocol_errors != clean.protocol_errors + 1) fail("a malformed copy of an event was not refused");
    for (Readout* r : {&clean, &noisy}) {
        r->events = r->protocol_errors = r->error_index = 0;
        r->error_kind.clear();
    }
    if (!(clean == noisy)) fail("a refused event changed what the recorder read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    const pytps::Dialect d = pytps::kAllDialects[data[0] % 5];
    const size_t split_seed = static_cast<size_t>(data[1]) | (static_cast<size_t>(data[2]) << 8);
    const std::string body(reinterpret_cast<const char*>(data + 3), size - 3);
    const size_t split = body.empty() ? 0 : split_seed % (body.size() + 1);

    const Readout whole = run(d, body, {0, body.size()});
    const Readout two = run(d, body, {0, split, body.size()});
    if (!(whole == two)) fail("a two-way split reads differently from one feed");
    if (body.size() <= 2048) {
        std::vector<size_t> bytes;
        for (size_t i = 0; i <= body.size(); ++i) bytes.push_back(i);
        if (!(run(d, body, bytes) == whole)) fail("byte-by-byte feeding reads differently from one feed");
    }
    check_rollback(d, body, split_seed);
    return 0;
}
