// The bytes of each provider's responses. One Formatter per request, stateful (sequence
// numbers, open content blocks, accumulated text), so the server only says "the next
// event carries k tokens of this kind" and writes what comes back.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <vector>

#include "emulator/agent.hpp"
#include "emulator/chat_request.hpp"

namespace pytps {

enum class TokKind : uint8_t { reasoning = 0, content = 1, tool = 2 };

// Everything about a response that is decided when the request arrives.
struct ResponsePlan {
    ApiPath api = kApiPaths[0];  // the route it came by
    uint64_t seq = 0;           // 1-based count of generation requests
    uint64_t draw = 0;          // what keys its seeded draws: seq, or its prompt's key (config.hpp)
    std::string id;             // chatcmpl-<seq>, cmpl-<seq>, resp_<seq>, msg_<seq>, ollama-<seq>
    std::string model;
    int64_t created_s = 0;      // wall-clock seconds, as the providers report
    bool stream = false;
    bool include_usage = false;
    bool continuous_usage = false;
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = -1;  // of prompt_tokens, served by the prefix cache; -1: no cache
    int64_t reasoning_tokens = 0;
    int64_t answer_tokens = 0;  // content or tool-argument tokens after the reasoning
    bool tool_call = false;     // the answer is `calls` (their pieces sum to answer_tokens)
    std::vector<PlannedCall> calls;
    int64_t max_tokens = -1;    // as requested (-1: none); echoed where the provider echoes it
    bool hit_limit = false;     // the output stopped at the request's limit: finish "length"
    std::string previous_response_id;  // Responses: echoed (empty: null)
    // A planted billing error: the final usage reports this share more output tokens than were
    // streamed (0: honest). Tests pytps's token agreement check (docs/interop.md).
    double usage_overbill = 0.0;
};

// Times an Ollama final object reports (its durations are part of the format), and the load
// model's due times of the first and last token event, from which the OpenAI routes' llama.cpp
// `timings` are made (0: not known).
struct StreamTimes {
    int64_t received_ns = 0;
    int64_t first_token_ns = 0;
    int64_t last_token_ns = 0;
    int64_t first_due_ns = 0;
    int64_t last_due_ns = 0;
};

// OpenAI's usage object (Chat Completions, Completions, vLLM's transcription chunks): cached is
// the prompt's tokens served by the prefix cache (-1, no cache, leaves the detail out); reasoning 0
// leaves the reasoning detail out.
void openai_usage(std::string& out, int64_t prompt, int64_t cached, int64_t completion, int64_t reasoning);

class Formatter {
public:
    static std::unique_ptr<Formatter> make(const ResponsePlan& plan);
    virtual ~Formatter() = default;

    bool is_sse() const;
    // The stream's Content-Type (a route's formatter may name its own).
    virtual const char* stream_content_type() const;

    // Events before the first token (role chunk, message_start, response.created, ...).
    virtual void begin(std::string& out) = 0;
    // One event carrying the next `count` tokens of `kind` (phase changes add their events).
    virtual void tokens(std::string& out, TokKind kind, int64_t count) = 0;
    // Everything after the last token: finish reason, usage, [DONE] or the provider's end.
    virtual void finish(std::string& out, const StreamTimes& t) = 0;
    // An in-stream error in the provider's format (the stream ends after it).
    virtual void error_event(std::string& out) = 0;
    // One event whose JSON is cut short.
    virtual void malformed_event(std::string& out) = 0;
    // A keep-alive: an SSE comment (Anthropic: a ping event); nothing for NDJSON.
    virtual void keepalive(std::string& out);
    // The whole response for "stream": false.
    virtual void full_body(std::string& out, const StreamTimes& t) = 0;

    int64_t emitted(TokKind k) const { return emitted_[static_cast<int>(k)]; }

    // The answer the content ends with (emulator/answers.hpp): the last content token carries
    // "\nAnswer: <text>" instead of a word. Set before the first content token; empty: words only.
    void set_answer(std::string text) { answer_ = std::move(text); }
    int64_t emitted_total() const { return emitted_[0] + emitted_[1] + emitted_[2]; }
    // The output tokens a final usage report bills for `n` generated: n, or more with usage_overbill.
    int64_t billed(int64_t n) const { return n + static_cast<int64_t>(std::llround(static_cast<double>(n) * p_.usage_overbill)); }

    explicit Formatter(const ResponsePlan& plan) : p_(plan) {}

protected:
    // The next `count` tool-argument tokens, as runs of one call each (a run starts the call when
    // it carries its first piece).
    struct ToolRun {
        size_t call = 0;
        bool starts = false;
        std::string text;
    };
    std::vector<ToolRun> next_tool(int64_t count);

    // Appends the text of the next `count` tokens of `kind` (unescaped) and counts them.
    std::string next_text(TokKind kind, int64_t count);
    // The full text of `n` tokens of `kind`, as the stream would have carried it.
    std::string whole_text(TokKind kind, int64_t n) const;
    // "stop" / "length" / "tool_calls" in OpenAI's words.
    const char* openai_finish() const;
    // The head of an OpenAI object (a body, or a chunk's data): {"id":...,"object":"<object>",
    // "created":... and, with model, ,"model":...
    void openai_head(std::string& out, const char* object, bool model) const;

    ResponsePlan p_;
    int64_t emitted_[3] = {0, 0, 0};
    bool keep_text_ = false;  // set by formats whose closing events repeat the text
    std::string acc_[3];      // text emitted so far per kind (when keep_text_)
    std::string answer_;      // set_answer()

private:
    size_t tool_call_ = 0;    // next_tool(): the call and piece next to be emitted
    int64_t tool_piece_ = 0;
    std::string piece(TokKind kind, int64_t i, int64_t n) const;
};

// A format that streams one block per phase and per tool call, each opened and closed by events
// of its own (Anthropic's content blocks, the Responses API's output items).
class BlockFormatter : public Formatter {
public:
    using Formatter::Formatter;

protected:
    // Makes kind k the open block, closing the open one first; a tool call's first piece
    // (`starts`) opens a block of its own, for `call`. True when a block was opened.
    bool enter_block(std::string& out, int k, size_t call = 0, bool starts = false);
    // Closes the open block, if any.
    void leave_block(std::string& out);
    // The events of a block's opening (open_ and call_ are already its own) and closing.
    virtual void open_block(std::string& out) = 0;
    virtual void close_block(std::string& out) = 0;

    int open_ = -1;    // the kind of the open block (-1: none)
    size_t call_ = 0;  // the call of the open tool block
};

// The word of token `i` of a phase of `n` tokens. Content and reasoning are " word" pieces;
// tool arguments build the JSON object {"q": "w w ..."} piece by piece.
std::string token_piece(TokKind kind, int64_t i, int64_t n);
// The piece that ends a content phase carrying an answer: what graders read after "Answer:".
std::string answer_piece(const std::string& answer);

// Error bodies: the JSON of an error response in the family of `api` (OpenAI for every
// /v1 path but /v1/messages, Anthropic for /v1/messages, Ollama for /api/*).
enum class ErrorFamily : uint8_t { openai, anthropic, ollama };
ErrorFamily error_family(std::string_view path);
std::string error_body(ErrorFamily fam, int status, std::string_view message);

// Ollama's created_at: RFC 3339 UTC with nanoseconds, from CLOCK_REALTIME.
std::string rfc3339_now();

std::unique_ptr<Formatter> make_openai_chat(const ResponsePlan& plan);
std::unique_ptr<Formatter> make_openai_completions(const ResponsePlan& plan);
std::unique_ptr<Formatter> make_responses(const ResponsePlan& plan);
std::unique_ptr<Formatter> make_anthropic(const ResponsePlan& plan);
std::unique_ptr<Formatter> make_ollama(const ResponsePlan& plan);

}  // namespace pytps
