// Ollama /api/chat and /api/generate: newline-delimited JSON objects, thinking in a
// separate field, and a final object with done:true, counts and durations in ns.
#include "emulator/formats.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

namespace {

class OllamaFormatter : public Formatter {
public:
    using Formatter::Formatter;

    void begin(std::string&) override {}

    void tokens(std::string& out, TokKind kind, int64_t count) override {
        std::string text = next_text(kind, count);
        head(out);
        if (kind == TokKind::reasoning) {
            piece(out, "", &text);
        } else {
            piece(out, text, nullptr);
        }
        out += ",\"done\":false}\n";
    }

    void finish(std::string& out, const StreamTimes& t) override {
        head(out);
        piece(out, "", nullptr);
        tail(out, t, billed(emitted_total()));
        out += "\n";
    }

    void error_event(std::string& out) override {
        out += "{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n";
    }

    void malformed_event(std::string& out) override {
        head(out);
        out += chat() ? "\"message\":{\"role\":\"assistant\",\"content\":\" to\n" : "\"response\":\" to\n";
    }

    void full_body(std::string& out, const StreamTimes& t) override {
        const int64_t r = p_.reasoning_tokens, a = p_.answer_tokens;
        std::string thinking = whole_text(TokKind::reasoning, r);
        head(out);
        piece(out, whole_text(TokKind::content, a), r > 0 ? &thinking : nullptr);
        tail(out, t, r + a);
        emitted_[0] = r;
        emitted_[1] = a;
    }

private:
    bool chat() const { return !p_.api.takes_prompt; }  // /api/chat, not /api/generate

    void head(std::string& out) {
        out += "{\"model\":";
        json_str(out, p_.model);
        out += ",\"created_at\":";
        json_str(out, rfc3339_now());
        out += ",";
    }

    void piece(std::string& out, const std::string& content, const std::string* thinking) {
        if (chat()) {
            out += "\"message\":{\"role\":\"assistant\",\"content\":";
            json_str(out, content);
            if (thinking) {
                out += ",\"thinking\":";
                json_str(out, *thinking);
            }
            out += "}";
        } else {
            out += "\"response\":";
            json_str(out, content);
            if (thinking) {
                out += ",\"thinking\":";
                json_str(out, *thinking);
            }
        }
    }

    void tail(std::string& out, const StreamTimes& t, int64_t eval_count) {
        const int64_t end = t.last_token_ns > 0 ? t.last_token_ns : t.received_ns;
        const int64_t first = t.first_token_ns > 0 ? t.first_token_ns : end;
        out += ",\"done\":true,\"done_reason\":\"";
        out += p_.hit_limit ? "length" : "stop";
        out += "\",\"total_duration\":";
        json_int(out, end - t.received_ns);
        out += ",\"load_duration\":0,\"prompt_eval_count\":";
        json_int(out, p_.prompt_tokens);
        out += ",\"prompt_eval_duration\":";
        json_int(out, first - t.received_ns);
        out += ",\"eval_count\":";
        json_int(out, eval_count);
        out += ",\"eval_duration\":";
        json_int(out, end - first);
        out += "}";
    }
};

}  // namespace

std::unique_ptr<Formatter> make_ollama(const ResponsePlan& plan) {
    return std::unique_ptr<Formatter>(new OllamaFormatter(plan));
}

}  // namespace pytps
