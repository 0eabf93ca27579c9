// Differential fuzzer for pytps::SSEParser: the same stream fed whole, split in two at a
// fuzzer-chosen point, one byte at a time (with empty feeds between), and again after
// close() on a used parser must give the same events, errors, state and close() result.
//
// Input: byte 0 picks max_line_bytes (odd: the 16 MiB default; even: 1 + b0 / 2, small
// enough to hit the bound), bytes 1-2 the split point, the rest is the stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/sse_parser.hpp"

namespace {

struct Event {
    std::string type, data, id;
    int64_t retry_ms;
    bool operator==(const Event& o) const {
        return type == o.type && data == o.data && id == o.id && retry_ms == o.retry_ms;
    }
};

struct Sink {
    std::vector<Event> events;
    size_t errors = 0;
    void on_event(const pytps::SSEEventView& ev) {
        // A view must point at sane memory: copying it lets ASan check that.
        events.push_back({std::string(ev.type), std::string(ev.data), std::string(ev.id), ev.retry_ms});
        if (ev.type.empty()) {
            std::fprintf(stderr, "event with an empty type\n");
            std::abort();
        }
    }
    void on_error(const char* message) {
        if (!message || !*message) std::abort();
        ++errors;
    }
};

struct Outcome {
    std::vector<Event> events;
    size_t errors;
    std::string last_id;
    int64_t retry_ms;
    bool incomplete;
    bool operator==(const Outcome& o) const {
        return events == o.events && errors == o.errors && last_id == o.last_id && retry_ms == o.retry_ms &&
               incomplete == o.incomplete;
    }
};

// Feeds the chunks [cuts[i], cuts[i+1]) of s, then closes.
Outcome run(pytps::SSEParser& p, const std::string& s, const std::vector<size_t>& cuts) {
    Sink sink;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        // Each chunk in its own allocation, so reading past a chunk's end is an ASan error.
        const std::string chunk = s.substr(cuts[i], cuts[i + 1] - cuts[i]);
        std::vector<char> owned(chunk.begin(), chunk.end());
        p.feed(owned.data(), owned.size(), sink);
    }
    Outcome out{std::move(sink.events), sink.errors, std::string(p.last_event_id()), p.retry_ms(), false};
    out.incomplete = p.close();
    if (!p.last_event_id().empty() || p.retry_ms() != -1) {
        std::fprintf(stderr, "close() left state behind\n");
        std::abort();
    }
    return out;
}

void expect_same(const Outcome& a, const Outcome& b, const char* how) {
    if (a == b) return;
    std::fprintf(stderr, "SSEParser mismatch (%s): events %zu vs %zu, errors %zu vs %zu, incomplete %d vs %d\n", how,
                 a.events.size(), b.events.size(), a.errors, b.errors, a.incomplete, b.incomplete);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    const size_t max_line_bytes = (data[0] & 1) ? pytps::SSEParser::kDefaultMaxLineBytes : 1 + data[0] / 2;
    const std::string s(reinterpret_cast<const char*>(data + 3), size - 3);
    const size_t k = ((size_t(data[1]) << 8) | data[2]) % (s.size() + 1);

    pytps::SSEParser p(max_line_bytes);
    const Outcome whole = run(p, s, {0, s.size()});
    // The parser p is reused from here on: close() must have reset it completely.
    expect_same(whole, run(p, s, {0, k, s.size()}), "split in two");
    if (s.size() <= 4096) {
        std::vector<size_t> cuts{0};
        for (size_t i = 1; i <= s.size(); ++i) {
            if (i % 7 == 0) cuts.push_back(i - 1);  // an empty feed now and then
            cuts.push_back(i);
        }
        expect_same(whole, run(p, s, cuts), "one byte at a time");
    }
    pytps::SSEParser fresh(max_line_bytes);
    expect_same(whole, run(fresh, s, {0, k / 2, k, s.size()}), "split in three");

    // Invariants that need no second run.
    for (const Event& e : whole.events) {
        if (e.data.size() + 1 > max_line_bytes || e.id.size() > max_line_bytes) {
            std::fprintf(stderr, "event larger than max_line_bytes\n");
            std::abort();
        }
    }
    return 0;
}
