// Differential fuzzer for pytps::StreamRecorder: the same body fed whole, split in two at a
// fuzzer-chosen point, and one byte at a time must give the same read-outs (text, kinds,
// chars, tokens, usage, ids, errors, events), and every event's time must be the stamp of
// a chunk that was fed, never decreasing. Sanitizers check the memory side.
//
// Input: byte 0 picks the dialect, bytes 1-2 the split point, the rest is the body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/stream_recorder.hpp"

namespace {

using pytps::StreamRecorder;

struct Readout {
    std::string text, reasoning, finish, id, model, error_kind;
    std::vector<uint8_t> kinds;
    std::vector<int32_t> chars, tokens;
    int64_t prompt, completion, total, reasoning_tokens, cached;
    int64_t events, protocol_errors, error_index;
    size_t tools;
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
    r.tools = st.tool_calls.size();
    r.done = st.done;
    for (const std::string* text : {&st.text, &st.reasoning_text, &st.finish_reason, &st.response_id, &st.model})
        if (!valid_utf8(*text)) fail("a decoded string is not valid UTF-8");
    for (const auto& t : st.tool_calls)
        if (!valid_utf8(t.id) || !valid_utf8(t.name) || !valid_utf8(t.arguments)) fail("tool text is not valid UTF-8");
    return r;
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
    return 0;
}
