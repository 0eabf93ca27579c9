// Anthropic Messages: message_start, content blocks (thinking, text or tool_use) each with
// start / deltas / stop, ping, message_delta with stop_reason and usage, message_stop.
#include "emulator/formats.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

namespace {

class AnthropicFormatter : public BlockFormatter {
public:
    using BlockFormatter::BlockFormatter;

    // Anthropic's input_tokens leave out cache reads, which come in cache_read_input_tokens.
    void input_usage(std::string& out) const {
        const int64_t cached = p_.cached_tokens > 0 ? p_.cached_tokens : 0;
        out += "\"input_tokens\":";
        json_int(out, p_.prompt_tokens - cached);
        if (p_.cached_tokens >= 0) {
            out += ",\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":";
            json_int(out, cached);
        }
    }

    void begin(std::string& out) override {
        out += "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":";
        json_str(out, p_.id);
        out += ",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":";
        json_str(out, p_.model);
        out += ",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{";
        input_usage(out);
        out += ",\"output_tokens\":1}}}\n\n";
    }

    void tokens(std::string& out, TokKind kind, int64_t count) override {
        // A block is opened with its first token (a tool_use block carries the tool's name,
        // which is generated output), and the first block is followed by the ping, in the
        // documented order.
        if (kind == TokKind::tool) {
            // Each call is a tool_use block of its own, opened by its first piece.
            for (const ToolRun& run : next_tool(count)) {
                if (enter_block(out, 2, run.call, run.starts) && index_ == 0) ping(out);
                delta(out, "input_json_delta", "partial_json", run.text);
            }
            return;
        }
        if (enter_block(out, static_cast<int>(kind)) && index_ == 0) ping(out);
        const std::string text = next_text(kind, count);
        if (kind == TokKind::reasoning) {
            delta(out, "thinking_delta", "thinking", text);
        } else {
            delta(out, "text_delta", "text", text);
        }
    }

    void finish(std::string& out, const StreamTimes&) override {
        leave_block(out);
        out += "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
        out += stop_reason();
        out += "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":";
        json_int(out, billed(emitted_total()));
        out += "}}\n\n";
        out += "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    }

    void error_event(std::string& out) override {
        out += "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    }

    void malformed_event(std::string& out) override {
        out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
        json_int(out, index_ < 0 ? 0 : index_);
        out += ",\"delta\":{\"type\":\"text_delta\",\"text\":\" to\n\n";
    }

    void keepalive(std::string& out) override { ping(out); }

    void full_body(std::string& out, const StreamTimes&) override {
        const int64_t r = p_.reasoning_tokens, a = p_.answer_tokens;
        out += "{\"id\":";
        json_str(out, p_.id);
        out += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
        json_str(out, p_.model);
        out += ",\"content\":[";
        bool comma = false;
        if (r > 0) {
            out += "{\"type\":\"thinking\",\"thinking\":";
            json_str(out, whole_text(TokKind::reasoning, r));
            out += ",\"signature\":";
            json_str(out, signature());
            out += "}";
            comma = true;
        }
        if (a > 0) {
            if (comma) out += ",";
            if (p_.tool_call) {
                for (size_t i = 0; i < p_.calls.size(); ++i) {
                    if (i) out += ",";
                    out += "{\"type\":\"tool_use\",\"id\":";
                    json_str(out, p_.calls[i].id);
                    out += ",\"name\":";
                    json_str(out, p_.calls[i].name);
                    out += ",\"input\":";
                    out += p_.calls[i].arguments;  // the arguments are JSON already
                    out += "}";
                }
            } else {
                out += "{\"type\":\"text\",\"text\":";
                json_str(out, whole_text(TokKind::content, a));
                out += "}";
            }
        }
        out += "],\"stop_reason\":\"";
        out += stop_reason();
        out += "\",\"stop_sequence\":null,\"usage\":{";
        input_usage(out);
        out += ",\"output_tokens\":";
        json_int(out, r + a);
        out += "}}";
        emitted_[0] = r;
        emitted_[p_.tool_call ? 2 : 1] = a;
    }

private:
    int64_t index_ = -1;  // the open block's index

    std::string signature() const { return "sig_" + std::to_string(p_.seq); }
    const char* stop_reason() const {
        if (p_.hit_limit) return "max_tokens";
        return p_.tool_call ? "tool_use" : "end_turn";
    }
    // The documented ping is written with spaces; it is reproduced as documented.
    static void ping(std::string& out) { out += "event: ping\ndata: {\"type\": \"ping\"}\n\n"; }

    // A content_block_delta event of the open block: {"type": type, field: text}.
    void delta(std::string& out, const char* type, const char* field, const std::string& text) const {
        out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
        json_int(out, index_);
        out.append(",\"delta\":{\"type\":\"").append(type).append("\",\"").append(field).append("\":");
        json_str(out, text);
        out += "}}\n\n";
    }

    void open_block(std::string& out) override {
        ++index_;
        out += "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":";
        json_int(out, index_);
        if (open_ == 0) {
            out += ",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n";
        } else if (open_ == 1) {
            out += ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
        } else {
            out += ",\"content_block\":{\"type\":\"tool_use\",\"id\":";
            json_str(out, p_.calls[call_].id);
            out += ",\"name\":";
            json_str(out, p_.calls[call_].name);
            out += ",\"input\":{}}}\n\n";
        }
    }

    void close_block(std::string& out) override {
        if (open_ == 0) delta(out, "signature_delta", "signature", signature());
        out += "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":";
        json_int(out, index_);
        out += "}\n\n";
    }
};

}  // namespace

std::unique_ptr<Formatter> make_anthropic(const ResponsePlan& plan) {
    return std::unique_ptr<Formatter>(new AnthropicFormatter(plan));
}

}  // namespace pytps
