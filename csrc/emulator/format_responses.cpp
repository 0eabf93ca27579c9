// OpenAI Responses API: named SSE events with sequence_number, one output item per phase
// (reasoning item with reasoning_text, then a message or a function_call), no [DONE].
#include "emulator/formats.hpp"
#include <vector>

#include "emulator/json_write.hpp"

namespace pytps {

namespace {

class ResponsesFormatter : public BlockFormatter {
public:
    explicit ResponsesFormatter(const ResponsePlan& plan) : BlockFormatter(plan) {
        keep_text_ = true;
        const std::string n = std::to_string(plan.seq);
        item_id_[0] = "rs_" + n;
        item_id_[1] = "msg_" + n;
    }

    void begin(std::string& out) override {
        std::string r;
        response_object(r, "in_progress", false);
        event(out, "response.created", "\"response\":" + r);
        event(out, "response.in_progress", "\"response\":" + r);
    }

    void tokens(std::string& out, TokKind kind, int64_t count) override {
        const int k = static_cast<int>(kind);
        if (kind == TokKind::tool) {
            // Each call is an output item of its own, opened by its first piece.
            for (const ToolRun& run : next_tool(count)) {
                enter_block(out, 2, run.call, run.starts);
                std::string body = item_ref(2, false) + ",\"delta\":";
                json_str(body, run.text);
                event(out, "response.function_call_arguments.delta", body);
            }
            return;
        }
        enter_block(out, k);
        std::string body = item_ref(k, true);
        body += ",\"delta\":";
        json_str(body, next_text(kind, count));
        if (kind == TokKind::content) body += ",\"logprobs\":[]";
        event(out, kind == TokKind::reasoning ? "response.reasoning_text.delta"
                   : kind == TokKind::content ? "response.output_text.delta"
                                              : "response.function_call_arguments.delta",
              body);
    }

    void finish(std::string& out, const StreamTimes&) override {
        leave_block(out);
        std::string r;
        response_object(r, status_of(true), true);
        event(out, p_.hit_limit ? "response.incomplete" : "response.completed", "\"response\":" + r);
    }

    void error_event(std::string& out) override {
        event(out, "error", "\"code\":\"server_error\",\"message\":\"The server had an error while processing your request.\",\"param\":null");
    }

    void malformed_event(std::string& out) override {
        out += "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":";
        json_int(out, seqno_++);
        out += ",\"item_id\":\"msg_\n\n";
    }

    void full_body(std::string& out, const StreamTimes&) override {
        emitted_[0] = p_.reasoning_tokens;
        emitted_[p_.tool_call ? 2 : 1] = p_.answer_tokens;
        acc_[0] = whole_text(TokKind::reasoning, p_.reasoning_tokens);
        if (!p_.tool_call) acc_[1] = whole_text(TokKind::content, p_.answer_tokens);
        if (p_.reasoning_tokens > 0) done_items_.emplace_back(0, 0);
        if (p_.tool_call) {
            for (size_t i = 0; i < p_.calls.size(); ++i) done_items_.emplace_back(2, i);
        } else if (p_.answer_tokens > 0) {
            done_items_.emplace_back(1, 0);
        }
        response_object(out, status_of(true), true);
    }

private:
    int64_t seqno_ = 0;
    int64_t output_index_ = -1;
    std::vector<std::pair<int, size_t>> done_items_;  // kind, and the call of a function_call
    std::string item_id_[2];

    void event(std::string& out, const char* type, const std::string& body) {
        out += "event: ";
        out += type;
        out += "\ndata: {\"type\":\"";
        out += type;
        out += "\",\"sequence_number\":";
        json_int(out, seqno_++);
        out += ",";
        out += body;
        out += "}\n\n";
    }

    std::string item_ref(int k, bool with_content_index) const {
        std::string s = "\"item_id\":";
        json_str(s, k == 2 ? p_.calls[call_].item_id : item_id_[k]);
        s += ",\"output_index\":";
        json_int(s, output_index_);
        if (with_content_index && k != 2) s += ",\"content_index\":0";
        return s;
    }

    // An item's (or the response's) status: in progress until done, then incomplete when the
    // output stopped at its limit.
    const char* status_of(bool done) const {
        if (!done) return "in_progress";
        return p_.hit_limit ? "incomplete" : "completed";
    }

    // The item as output_item.added (in progress) or output_item.done / the final response.
    void item_json(std::string& s, int k, bool done, size_t call = 0) const {
        if (k == 0) {
            s += "{\"id\":";
            json_str(s, item_id_[0]);
            s += ",\"type\":\"reasoning\",\"summary\":[]";
            if (done) {
                s += ",\"content\":[";
                part_json(s, k);
                s += "]";
            }
            s += "}";
        } else if (k == 1) {
            s += "{\"id\":";
            json_str(s, item_id_[1]);
            s += ",\"type\":\"message\",\"status\":\"";
            s += status_of(done);
            s += "\",\"content\":[";
            if (done) part_json(s, k);
            s += "],\"role\":\"assistant\"}";
        } else {
            const PlannedCall& c = p_.calls[call];
            s += "{\"id\":";
            json_str(s, c.item_id);
            s += ",\"type\":\"function_call\",\"status\":\"";
            s += status_of(done);
            s += "\",\"arguments\":";
            json_str(s, done ? c.arguments : std::string());
            s += ",\"call_id\":";
            json_str(s, c.id);
            s += ",\"name\":";
            json_str(s, c.name);
            s += "}";
        }
    }

    // The part (reasoning_text or output_text) of content item k, with its text so far.
    void part_json(std::string& s, int k) const {
        if (k == 0) {
            s += "{\"type\":\"reasoning_text\",\"text\":";
        } else {
            s += "{\"type\":\"output_text\",\"annotations\":[],\"text\":";
        }
        json_str(s, acc_[k]);
        s += "}";
    }

    // response.output_item.added (done false) or .done of the open item.
    void item_event(std::string& out, const char* type, bool done) {
        std::string body = "\"output_index\":";
        json_int(body, output_index_);
        body += ",\"item\":";
        item_json(body, open_, done, call_);
        event(out, type, body);
    }

    // response.content_part.added or .done of the open (content) item.
    void part_event(std::string& out, const char* type) {
        std::string body = item_ref(open_, true) + ",\"part\":";
        part_json(body, open_);
        event(out, type, body);
    }

    void open_block(std::string& out) override {
        ++output_index_;
        item_event(out, "response.output_item.added", false);
        if (open_ != 2) part_event(out, "response.content_part.added");
    }

    void close_block(std::string& out) override {
        const int k = open_;
        if (k == 2) {
            std::string body = item_ref(k, false) + ",\"arguments\":";
            json_str(body, p_.calls[call_].arguments);
            event(out, "response.function_call_arguments.done", body);
        } else {
            std::string body = item_ref(k, true) + ",\"text\":";
            json_str(body, acc_[k]);
            if (k == 1) body += ",\"logprobs\":[]";
            event(out, k == 0 ? "response.reasoning_text.done" : "response.output_text.done", body);
            part_event(out, "response.content_part.done");
        }
        item_event(out, "response.output_item.done", true);
        done_items_.emplace_back(k, call_);
    }

    void response_object(std::string& s, const char* status, bool final) const {
        s += "{\"id\":";
        json_str(s, p_.id);
        s += ",\"object\":\"response\",\"created_at\":";
        json_int(s, p_.created_s);
        s += ",\"status\":\"";
        s += status;
        s += "\",\"error\":null,\"incomplete_details\":";
        s += final && p_.hit_limit ? "{\"reason\":\"max_output_tokens\"}" : "null";
        s += ",\"instructions\":null,\"max_output_tokens\":";
        if (p_.max_tokens > 0) {
            json_int(s, p_.max_tokens);
        } else {
            s += "null";
        }
        s += ",\"model\":";
        json_str(s, p_.model);
        s += ",\"output\":[";
        if (final) {
            for (size_t i = 0; i < done_items_.size(); ++i) {
                if (i) s += ",";
                item_json(s, done_items_[i].first, true, done_items_[i].second);
            }
        }
        s += "],\"parallel_tool_calls\":true,\"previous_response_id\":";
        if (p_.previous_response_id.empty()) {
            s += "null";
        } else {
            json_str(s, p_.previous_response_id);
        }
        s += ",\"temperature\":1.0,\"tool_choice\":\"auto\",\"tools\":[],\"top_p\":1.0,\"usage\":";
        if (final) {
            s += "{\"input_tokens\":";
            json_int(s, p_.prompt_tokens);
            s += ",\"input_tokens_details\":{\"cached_tokens\":";
            json_int(s, p_.cached_tokens > 0 ? p_.cached_tokens : 0);
            s += "},\"output_tokens\":";
            json_int(s, billed(emitted_total()));
            s += ",\"output_tokens_details\":{\"reasoning_tokens\":";
            json_int(s, emitted(TokKind::reasoning));
            s += "},\"total_tokens\":";
            json_int(s, p_.prompt_tokens + billed(emitted_total()));
            s += "}";
        } else {
            s += "null";
        }
        s += ",\"metadata\":{}}";
    }
};

}  // namespace

std::unique_ptr<Formatter> make_responses(const ResponsePlan& plan) {
    return std::unique_ptr<Formatter>(new ResponsesFormatter(plan));
}

}  // namespace pytps
