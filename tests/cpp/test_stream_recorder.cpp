// What the StreamRecorder's hot path costs, counted rather than timed (C++ only: the
// counts are not part of the Python API): heap allocations in the steady state, entries
// probed to find a tool call, events served by the shape cache. Compiled and run by
// tests/core/test_recorder_cost.py, one test per run: `test_stream_recorder NAME`
// (`--list` prints the names). Prints one line per failed check and exits non-zero.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "core/stream_recorder.hpp"

// ---- every heap allocation of the program is counted ----------------------------------------

static uint64_t g_allocs = 0;

void* operator new(std::size_t n) {
    ++g_allocs;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    ++g_allocs;
    return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
// Not inlined: GCC would see free() on what it takes for operator new's memory and warn.
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using pytps::Dialect;
using pytps::StreamRecorder;

int failures = 0;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            ++failures;                                               \
            std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            std::printf(__VA_ARGS__);                                 \
            std::printf("\n");                                        \
        }                                                             \
    } while (0)

void feed(StreamRecorder& rec, const std::string& s, int64_t t) { rec.feed(s.data(), s.size(), t); }

std::string sse(const std::string& data, const char* type = nullptr) {
    std::string s;
    if (type) s += std::string("event: ") + type + "\n";
    return s + "data: " + data + "\n\n";
}

// A fixed-width number (no leading zero: it may be a JSON number), so that events of one
// kind are all the same size.
std::string num(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%d", 100000 + i);
    return buf;
}

// The capacity of every buffer in which the recorder keeps what it has read: these grow
// geometrically with the stream (one allocation per growth), and nothing else may allocate.
std::vector<size_t> capacities(const StreamRecorder& rec) {
    const auto& st = rec.state();
    std::vector<size_t> c = {rec.output_times_ns().capacity(), rec.output_kinds().capacity(),
                             rec.output_chars().capacity(),   rec.output_tokens().capacity(),
                             st.text.capacity(),              st.reasoning_text.capacity(),
                             st.tool_calls.capacity()};
    for (const auto& t : st.tool_calls) {
        c.push_back(t.id.capacity());
        c.push_back(t.name.capacity());
        c.push_back(t.arguments.capacity());
    }
    return c;
}

size_t grown(const std::vector<size_t>& before, const std::vector<size_t>& after) {
    size_t n = after.size() > before.size() ? after.size() - before.size() : 0;
    for (size_t i = 0; i < before.size() && i < after.size(); ++i) n += after[i] != before[i];
    return n;
}

// Feeds `setup`, then warm-up and steady events from `steady(i)` one per feed; from the
// 50th event on, an event may allocate only as often as it grew a result buffer.
void check_steady_state(const char* name, Dialect d, const std::vector<std::string>& setup,
                        const std::function<std::string(int)>& steady) {
    StreamRecorder rec(d);
    int64_t t = 1;
    for (const auto& s : setup) feed(rec, s, t++);
    size_t unexplained = 0, events_with = 0;
    for (int i = 0; i < 2050; ++i) {
        const std::string s = steady(i);  // built before counting
        const auto before = capacities(rec);
        const uint64_t a0 = g_allocs;
        feed(rec, s, t++);
        const uint64_t allocs = g_allocs - a0;
        const size_t explained = grown(before, capacities(rec));
        if (i >= 50 && allocs > explained) {
            unexplained += allocs - explained;
            ++events_with;
        }
    }
    CHECK(rec.protocol_errors() == 0, "%s: the stream has protocol errors", name);
    CHECK(rec.output_times_ns().size() >= 2050, "%s: %zu output events", name, rec.output_times_ns().size());
    CHECK(unexplained == 0, "%s: %zu heap allocations in %zu of 2000 steady-state events", name, unexplained,
          events_with);
}

void test_steady_state_allocates_nothing() {
    const std::string head = R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",)";
    check_steady_state("openai-chat content", Dialect::OpenAIChat, {},
                       [&](int i) { return sse(head + R"("choices":[{"index":0,"delta":{"content":")" + num(i) + R"("},"finish_reason":null}]})"); });
    check_steady_state(
        "openai-chat usage per chunk", Dialect::OpenAIChat, {}, [&](int i) {
            return sse(head + R"("choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":)" +
                       num(i + 1) + "}}");
        });
    check_steady_state(
        "openai-chat tool calls", Dialect::OpenAIChat,
        {sse(head + R"("choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abcdefghij","type":"function","function":{"name":"get_weather","arguments":""}}]}}]})"),
         sse(head + R"("choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_klmnopqrstuvwxyz0123","type":"function","function":{"name":"get_time","arguments":""}}]}}]})")},
        [&](int i) {
            return sse(head + R"("choices":[{"index":0,"delta":{"tool_calls":[{"index":)" + std::to_string(i % 2) +
                       R"(,"function":{"arguments":")" + num(i) + R"("}}]}}]})");
        });
    check_steady_state("openai-completions", Dialect::OpenAICompletions, {}, [&](int i) {
        return sse(R"({"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":")" + num(i) +
                   R"(","index":0,"logprobs":null,"finish_reason":null}],"model":"m"})");
    });
    check_steady_state("openai-responses text", Dialect::OpenAIResponses, {}, [&](int i) {
        return sse(R"({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":")" +
                       num(i) + R"(","sequence_number":)" + num(i) + "}",
                   "response.output_text.delta");
    });
    check_steady_state(
        "openai-responses function call", Dialect::OpenAIResponses,
        {sse(R"({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_0123456789abcdefghij","name":"get_weather","arguments":""}})",
             "response.output_item.added")},
        [&](int i) {
            return sse(R"({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":")" +
                           num(i) + R"(","sequence_number":)" + num(i) + "}",
                       "response.function_call_arguments.delta");
        });
    check_steady_state("anthropic text", Dialect::Anthropic, {}, [&](int i) {
        return sse(R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" + num(i) + R"("}})",
                   "content_block_delta");
    });
    check_steady_state(
        "anthropic tool use", Dialect::Anthropic,
        {sse(R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_0123456789abcdefghij","name":"get_weather","input":{}}})",
             "content_block_start")},
        [&](int i) {
            return sse(R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":")" +
                           num(i) + R"("}})",
                       "content_block_delta");
        });
    check_steady_state("ollama", Dialect::Ollama, {}, [&](int i) {
        return R"({"model":"llama3.2","created_at":"2024-01-01T00:00:00.000000Z","message":{"role":"assistant","content":")" +
               num(i) + "\"},\"done\":false}\n";
    });
}

// A hostile stream opens n tool calls (indexes given by index_of, one event each), then
// adds to each once more: 2n lookups, which must each look at O(log n) entries at most.
void check_tool_lookups(const char* name, int n, const std::function<int64_t(int)>& index_of) {
    StreamRecorder rec(Dialect::OpenAIChat);
    int64_t t = 1;
    for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < n; ++i)
            feed(rec,
                 sse(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":)" + std::to_string(index_of(i)) +
                     R"(,"function":{"arguments":"x"}}]}}]})"),
                 t++);
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    const uint64_t probes = rec.state().counters.tool_probes;
    const uint64_t bound = static_cast<uint64_t>(2 * n) * static_cast<uint64_t>(log2n + 2);
    CHECK(rec.protocol_errors() == 0, "%s: protocol errors", name);
    CHECK(rec.state().tool_calls.size() == static_cast<size_t>(n), "%s: %zu tool calls", name,
          rec.state().tool_calls.size());
    CHECK(probes <= bound, "%s: %llu probes for %d lookups among %d tool calls (bound %llu)", name,
          static_cast<unsigned long long>(probes), 2 * n, n, static_cast<unsigned long long>(bound));
}

void test_tool_lookup_work_is_bounded() {
    constexpr int n = 1000;  // (constexpr: read in a lambda without a capture, which clang flags as unneeded)
    check_tool_lookups("ascending", n, [](int i) { return int64_t(i); });
    check_tool_lookups("descending", n, [](int i) { return int64_t(n - 1 - i); });
    check_tool_lookups("scattered", n, [](int i) { return int64_t(i) * 7919 % 1000003; });
    check_tool_lookups("huge and negative", n, [](int i) {
        return (i % 2 ? int64_t(1) : int64_t(-1)) * (int64_t(1) << 40) * (i + 1);
    });
}

// A refusal-only event is one text value (its effect is the same as content's), but it used
// to teach the shape cache a shape with no string in it, which nothing matches, and the
// cache was learnt once per stream. Whatever the order, content must take the fast path.
void test_refusal_first_keeps_the_fast_path() {
    const std::string with_ids = R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",)";
    const std::string no_ids = R"({"object":"chat.completion.chunk","created":1,)";
    const std::string role = R"("choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})";
    struct Case {
        const char* name;
        std::string head;
        std::vector<std::string> first;
    };
    const Case cases[] = {
        {"a refusal-only first event", no_ids, {R"("choices":[{"index":0,"delta":{"refusal":"I can't"},"finish_reason":null}]})"}},
        {"a role event, then a refusal-only event", with_ids,
         {role, R"("choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":null}]})"}},
        {"refusal-only events", no_ids,
         {R"("choices":[{"index":0,"delta":{"refusal":"a"},"finish_reason":null}]})",
          R"("choices":[{"index":0,"delta":{"refusal":"b"},"finish_reason":null}]})"}},
    };
    for (const auto& c : cases) {
        StreamRecorder rec(Dialect::OpenAIChat);
        int64_t t = 1;
        for (const auto& e : c.first) feed(rec, sse(c.head + e), t++);
        const auto before = rec.state().counters.shape_hits;
        for (int i = 0; i < 20; ++i)
            feed(rec, sse(c.head + R"("choices":[{"index":0,"delta":{"content":")" + num(i) + R"("},"finish_reason":null}]})"), t++);
        const auto hits = rec.state().counters.shape_hits - before;
        CHECK(rec.protocol_errors() == 0, "%s: protocol errors", c.name);
        CHECK(rec.state().text.size() >= 120, "%s: text of %zu bytes", c.name, rec.state().text.size());
        // The first content event teaches the shape; the other 19 must be read by it.
        CHECK(hits == 19, "after %s: %llu of 20 content events took the shape fast path", c.name,
              static_cast<unsigned long long>(hits));
    }
}

struct Test {
    const char* name;
    void (*fn)();
};
const Test kTests[] = {
    {"steady_state_allocates_nothing", test_steady_state_allocates_nothing},
    {"tool_lookup_work_is_bounded", test_tool_lookup_work_is_bounded},
    {"refusal_first_keeps_the_fast_path", test_refusal_first_keeps_the_fast_path},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
        for (const auto& t : kTests) std::printf("%s\n", t.name);
        return 0;
    }
    int ran = 0;
    for (const auto& t : kTests) {
        if (argc >= 2 && std::strcmp(argv[1], t.name) != 0) continue;
        t.fn();
        ++ran;
    }
    if (ran == 0) {
        std::printf("no test named %s\n", argc >= 2 ? argv[1] : "?");
        return 2;
    }
    std::printf("%d tests, %d failures\n", ran, failures);
    return failures ? 1 : 0;
}
