// OpenAI Chat Completions (chat.completion.chunk) and legacy Completions (text_completion),
// with the vLLM/DeepSeek extensions: delta.reasoning_content and continuous usage stats.
#include <cstdio>

#include "emulator/formats.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

void openai_usage(std::string& out, int64_t prompt, int64_t cached, int64_t completion, int64_t reasoning) {
    out += "{\"prompt_tokens\":";
    json_int(out, prompt);
    if (cached >= 0) {
        out += ",\"prompt_tokens_details\":{\"cached_tokens\":";
        json_int(out, cached);
        out += "}";
    }
    out += ",\"completion_tokens\":";
    json_int(out, completion);
    out += ",\"total_tokens\":";
    json_int(out, prompt + completion);
    if (reasoning > 0) {
        out += ",\"completion_tokens_details\":{\"reasoning_tokens\":";
        json_int(out, reasoning);
        out += "}";
    }
    out += "}";
}

namespace {

// Every OpenAI object the emulator writes names the same backend configuration.
const char kFingerprintMember[] = ",\"system_fingerprint\":\"fp_pytps\"";

// Milliseconds with microsecond digits, as llama.cpp writes its timings.
void json_ms(std::string& out, int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
    out += buf;
}

class OpenAIBase : public Formatter {
protected:
    using Formatter::Formatter;

    // llama.cpp's `timings` member, from this response's truth: the prompt is done when the
    // first token is due (llama.cpp's prompt_ms ends when the first token is ready, before it is
    // sent), generation runs from then to the last token's due time, over predicted_n tokens (so
    // predicted_ms / (predicted_n - 1) is the time per token after the first, as llama.cpp
    // defines it). cache_n: the prefix cache's tokens (0 without one).
    void timings_member(std::string& out, const StreamTimes& t) {
        const int64_t first = t.first_due_ns > 0 ? t.first_due_ns : t.received_ns;
        const int64_t end = t.last_due_ns > 0 ? t.last_due_ns : first;
        // llama.cpp's prompt_n counts the prompt tokens it evaluated; the cached ones are cache_n.
        const int64_t cached = p_.cached_tokens > 0 ? p_.cached_tokens : 0;
        out += ",\"timings\":{\"cache_n\":";
        json_int(out, cached);
        out += ",\"prompt_n\":";
        json_int(out, p_.prompt_tokens - cached);
        out += ",\"prompt_ms\":";
        json_ms(out, first - t.received_ns);
        out += ",\"predicted_n\":";
        json_int(out, emitted_total());
        out += ",\"predicted_ms\":";
        json_ms(out, end - first);
        out += "}";
    }

    // A chunk of `object` whose JSON is cut short inside its first choice's text (`choice`:
    // the members before the text's value).
    void cut_chunk(std::string& out, const char* object, const char* choice) const {
        out += "data: {\"id\":";
        json_str(out, p_.id);
        out += ",\"object\":\"";
        out += object;
        out += "\",\"choices\":[{";
        out += choice;
        out += "\" to\n\n";
    }

    // The usage member every non-final chunk carries: null with include_usage, the running
    // count with continuous_usage_stats, nothing otherwise.
    void chunk_usage(std::string& out) {
        if (p_.continuous_usage) {
            out += ",\"usage\":";
            openai_usage(out, p_.prompt_tokens, p_.cached_tokens, emitted_total(), emitted(TokKind::reasoning));
        } else if (p_.include_usage) {
            out += ",\"usage\":null";
        }
    }
    // The usage chunk (with include_usage) and [DONE]; the timings go on the last chunk before
    // [DONE], as llama.cpp puts them: the usage chunk, or else the finish chunk.
    void usage_chunk_and_done(std::string& out, const char* object, bool model_first, const StreamTimes& t) {
        if (p_.include_usage) {
            out += "data: ";
            openai_head(out, object, model_first);
            if (model_first) {
                out += kFingerprintMember;
                out += ",\"choices\":[]";
            } else {
                out += ",\"choices\":[],\"model\":";
                json_str(out, p_.model);
                out += kFingerprintMember;
            }
            out += ",\"usage\":";
            openai_usage(out, p_.prompt_tokens, p_.cached_tokens, billed(emitted_total()), emitted(TokKind::reasoning));
            timings_member(out, t);
            out += "}\n\n";
        }
        out += "data: [DONE]\n\n";
    }

public:
    void error_event(std::string& out) override {
        out += "data: {\"error\":{\"message\":\"The server had an error while processing your request.\","
               "\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";
    }
};

class ChatFormatter : public OpenAIBase {
public:
    using OpenAIBase::OpenAIBase;

    void begin(std::string& out) override {
        head(out);
        out += "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]";
        chunk_usage(out);
        out += "}\n\n";
    }

    void tokens(std::string& out, TokKind kind, int64_t count) override {
        head(out);
        if (kind == TokKind::tool) {
            // One entry per call the event reaches; a call's first entry names it.
            out += "{\"tool_calls\":[";
            bool comma = false;
            for (const ToolRun& run : next_tool(count)) {
                if (comma) out += ",";
                comma = true;
                out += "{\"index\":";
                json_int(out, static_cast<int64_t>(run.call));
                if (run.starts) {
                    out += ",\"id\":";
                    json_str(out, p_.calls[run.call].id);
                    out += ",\"type\":\"function\",\"function\":{\"name\":";
                    json_str(out, p_.calls[run.call].name);
                    out += ",\"arguments\":";
                } else {
                    out += ",\"function\":{\"arguments\":";
                }
                json_str(out, run.text);
                out += "}}";
            }
            out += "]}";
        } else {
            std::string text = next_text(kind, count);
            out += kind == TokKind::content ? "{\"content\":" : "{\"reasoning_content\":";
            json_str(out, text);
            out += "}";
        }
        out += ",\"logprobs\":null,\"finish_reason\":null}]";
        chunk_usage(out);
        out += "}\n\n";
    }

    void finish(std::string& out, const StreamTimes& t) override {
        head(out);
        out += "{},\"logprobs\":null,\"finish_reason\":\"";
        out += openai_finish();
        out += "\"}]";
        chunk_usage(out);
        if (!p_.include_usage) timings_member(out, t);
        out += "}\n\n";
        usage_chunk_and_done(out, "chat.completion.chunk", true, t);
    }

    void malformed_event(std::string& out) override {
        cut_chunk(out, "chat.completion.chunk", "\"index\":0,\"delta\":{\"content\":");
    }

    void full_body(std::string& out, const StreamTimes&) override {
        const int64_t r = p_.reasoning_tokens, a = p_.answer_tokens;
        openai_head(out, "chat.completion", true);
        out += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":";
        if (p_.tool_call) {
            out += "null";
        } else {
            json_str(out, whole_text(TokKind::content, a));
        }
        if (r > 0) {
            out += ",\"reasoning_content\":";
            json_str(out, whole_text(TokKind::reasoning, r));
        }
        if (p_.tool_call) {
            out += ",\"tool_calls\":[";
            for (size_t i = 0; i < p_.calls.size(); ++i) {
                if (i) out += ",";
                out += "{\"id\":";
                json_str(out, p_.calls[i].id);
                out += ",\"type\":\"function\",\"function\":{\"name\":";
                json_str(out, p_.calls[i].name);
                out += ",\"arguments\":";
                json_str(out, p_.calls[i].arguments);
                out += "}}";
            }
            out += "]";
        }
        out += "},\"logprobs\":null,\"finish_reason\":\"";
        out += openai_finish();
        out += "\"}],\"usage\":";
        openai_usage(out, p_.prompt_tokens, p_.cached_tokens, billed(r + a), r);
        out += kFingerprintMember;
        out += "}";
        emitted_[0] = r;
        emitted_[p_.tool_call ? 2 : 1] = a;
    }

private:
    std::string head_;  // the same for every chunk of the stream, so built once

    // Everything of a chunk up to the delta's value.
    void head(std::string& out) {
        if (head_.empty()) {
            head_ = "data: ";
            openai_head(head_, "chat.completion.chunk", true);
            head_ += kFingerprintMember;
            head_ += ",\"choices\":[{\"index\":0,\"delta\":";
        }
        out += head_;
    }
};

class CompletionsFormatter : public OpenAIBase {
public:
    using OpenAIBase::OpenAIBase;

    void begin(std::string&) override {}  // the legacy API has no role chunk

    void tokens(std::string& out, TokKind kind, int64_t count) override {
        chunk(out, next_text(kind, count), nullptr);
    }

    void finish(std::string& out, const StreamTimes& t) override {
        chunk(out, "", openai_finish(), p_.include_usage ? nullptr : &t);
        usage_chunk_and_done(out, "text_completion", false, t);
    }

    void malformed_event(std::string& out) override {
        cut_chunk(out, "text_completion", "\"text\":");
    }

    void full_body(std::string& out, const StreamTimes&) override {
        const int64_t a = p_.answer_tokens;
        openai_head(out, "text_completion", true);
        out += kFingerprintMember;
        out += ",\"choices\":[{\"text\":";
        json_str(out, whole_text(TokKind::content, a));
        out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":\"";
        out += openai_finish();
        out += "\"}],\"usage\":";
        openai_usage(out, p_.prompt_tokens, p_.cached_tokens, billed(a), 0);
        out += "}";
        emitted_[1] = a;
    }

private:
    void chunk(std::string& out, const std::string& text, const char* finish, const StreamTimes* timings = nullptr) {
        out += "data: ";
        openai_head(out, "text_completion", false);
        out += ",\"choices\":[{\"text\":";
        json_str(out, text);
        out += ",\"index\":0,\"logprobs\":null,\"finish_reason\":";
        if (finish) {
            out += "\"";
            out += finish;
            out += "\"";
        } else {
            out += "null";
        }
        out += "}],\"model\":";
        json_str(out, p_.model);
        out += kFingerprintMember;
        chunk_usage(out);
        if (timings) timings_member(out, *timings);
        out += "}\n\n";
    }
};

}  // namespace

std::unique_ptr<Formatter> make_openai_chat(const ResponsePlan& plan) {
    return std::unique_ptr<Formatter>(new ChatFormatter(plan));
}
std::unique_ptr<Formatter> make_openai_completions(const ResponsePlan& plan) {
    return std::unique_ptr<Formatter>(new CompletionsFormatter(plan));
}

}  // namespace pytps
