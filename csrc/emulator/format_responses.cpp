// OpenAI Responses API: named SSE events with sequence_number, one output item per phase
// (reasoning item with reasoning_text, then a message or a function_call), no [DONE].
#include "emulator/formats.hpp"
#include <vector>

#include "emulator/json_write.hpp"

namespace pytps {

namespace {

class ResponsesFormatter : public Formatter {
public:
    explicit ResponsesFormatter(const ResponsePlan& plan) : Formatter(plan) {
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
                if (run.starts || open_ != 2) {
                    if (open_ >= 0) close_item(out);
                    call_ = run.call;
                    open_item(out, 2);
                }
                std::string body = item_ref(2, false) + ",\"delta\":";
                json_str(body, run.text);
                event(out, "response.function_call_arguments.delta", body);
            }
            return;
        }
        if (open_ != k) {
            if (open_ >= 0) close_item(out);
            open_item(out, k);
        }
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
        if (open_ >= 0) close_item(out);
        std::string r;
        response_object(r, p_.hit_limit ? "incomplete" : "completed", true);
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
        response_object(out, p_.hit_limit ? "incomplete" : "completed", true);
    }

private:
    int64_t seqno_ = 0;
    int open_ = -1;
    int64_t output_index_ = -1;
    std::vector<std::pair<int, size_t>> done_items_;  // kind, and the call of a function_call
    std::string item_id_[2];
    size_t call_ = 0;  // the call of the open function_call item

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

    // The item as output_item.added (in progress) or output_item.done / the final response.
    void item_json(std::string& s, int k, bool done, size_t call = 0) const {
        const std::string& text = acc_[k];
        if (k == 0) {
            s += "{\"id\":";
            json_str(s, item_id_[0]);
            s += ",\"type\":\"reasoning\",\"summary\":[]";
            if (done) {
                s += ",\"content\":[{\"type\":\"reasoning_text\",\"text\":";
                json_str(s, text);
                s += "}]";
            }
            s += "}";
        } else if (k == 1) {
            s += "{\"id\":";
            json_str(s, item_id_[1]);
            s += ",\"type\":\"message\",\"status\":\"";
            s += !done ? "in_progress" : p_.hit_limit ? "incomplete" : "completed";
            s += "\",\"content\":[";
            if (done) {
                s += "{\"type\":\"output_text\",\"annotations\":[],\"text\":";
                json_str(s, text);
                s += "}";
            }
            s += "],\"role\":\"assistant\"}";
        } else {
            const PlannedCall& c = p_.calls[call];
            s += "{\"id\":";
            json_str(s, c.item_id);
            s += ",\"type\":\"function_call\",\"status\":\"";
            s += !done ? "in_progress" : p_.hit_limit ? "incomplete" : "completed";
            s += "\",\"arguments\":";
            json_str(s, done ? c.arguments : std::string());
            s += ",\"call_id\":";
            json_str(s, c.id);
            s += ",\"name\":";
            json_str(s, c.name);
            s += "}";
        }
    }

    void part_json(std::string& s, int k) const {
        if (k == 0) {
            s += "{\"type\":\"reasoning_text\",\"text\":";
        } else {
            s += "{\"type\":\"output_text\",\"annotations\":[],\"text\":";
        }
        json_str(s, acc_[k]);
        s += "}";
    }

    void open_item(std::string& out, int k) {
        open_ = k;
        ++output_index_;
        std::string body = "\"output_index\":";
        json_int(body, output_index_);
        body += ",\"item\":";
        item_json(body, k, false, call_);
        event(out, "response.output_item.added", body);
        if (k != 2) {
            body = item_ref(k, true) + ",\"part\":";
            part_json(body, k);
            event(out, "response.content_part.added", body);
        }
    }

    void close_item(std::string& out) {
        const int k = open_;
        std::string body;
        if (k == 2) {
            body = item_ref(k, false) + ",\"arguments\":";
            json_str(body, p_.calls[call_].arguments);
            event(out, "response.function_call_arguments.done", body);
        } else {
            body = item_ref(k, true) + ",\"text\":";
            json_str(body, acc_[k]);
            if (k == 1) body += ",\"logprobs\":[]";
            event(out, k == 0 ? "response.reasoning_text.done" : "response.output_text.done", body);
            body = item_ref(k, true) + ",\"part\":";
            part_json(body, k);
            event(out, "response.content_part.done", body);
        }
        body = "\"output_index\":";
        json_int(body, output_index_);
        body += ",\"item\":";
        item_json(body, k, true, call_);
        event(out, "response.output_item.done", body);
        done_items_.emplace_back(k, call_);
        open_ = -1;
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
