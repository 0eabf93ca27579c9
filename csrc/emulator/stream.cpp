// Timed responses: planning a request's events, writing each write-group when it is due,
// applying the request's fault, and handing the finished record to the truth store.
#include <ctime>
#include <limits>

#include "core/clock.hpp"
#include "emulator/server.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

namespace {
const char* id_prefix(Dialect d) {
    switch (d) {
        case Dialect::OpenAIChat: return "chatcmpl-";
        case Dialect::OpenAICompletions: return "cmpl-";
        case Dialect::OpenAIResponses: return "resp_";
        case Dialect::Anthropic: return "msg_";
        case Dialect::Ollama: return "ollama-";
        case Dialect::Json: break;
        case Dialect::SpeechPcm:
        case Dialect::SpeechWav:
        case Dialect::SpeechSse:
        case Dialect::SpeechCoded: return "speech-";
        case Dialect::Transcription: return "trsc-";
    }
    return "?";
}
bool ends_stream_early(FaultKind k) { return k == FaultKind::disconnect || k == FaultKind::error_event; }
// The project's public kind codes (pytps.KIND_CONTENT 0, KIND_REASONING 1, KIND_TOOL 2), so
// truth kinds compare directly with what the StreamRecorder reports.
uint8_t truth_kind(TokKind k) {
    return k == TokKind::content ? 0 : k == TokKind::reasoning ? 1 : 2;
}
}  // namespace

uint64_t Server::draw_key(uint64_t seq, const std::string& prompt) {
    if (!cfg_.draws_by_prompt) return seq;
    uint64_t h = 1469598103934665603ULL;  // FNV-1a: the same key on every platform
    for (const char ch : prompt) {
        h ^= static_cast<unsigned char>(ch);
        h *= 1099511628211ULL;
    }
    const uint64_t before = prompt_seen_[h]++;
    return h + before * 0x9E3779B97F4A7C15ULL;
}

std::unique_ptr<Stream> Server::open_stream(const Conn& c, const HttpRequest& req, int64_t received_ns,
                                            const std::string& id_head, std::string api) {
    const uint64_t seq = ++gen_seq_;
    n_gen_.fetch_add(1, std::memory_order_relaxed);
    auto s = std::make_unique<Stream>();
    TruthRecord& rec = s->rec;
    rec.seq = seq;
    rec.id = id_head + std::to_string(seq);
    rec.api = std::move(api);
    rec.path = req.path;
    rec.received_ns = received_ns;
    rec.received_kernel_ns = c.request_kernel_ns;
    return s;
}

void Server::reject(Conn& c, const HttpRequest& req, TruthRecord&& rec, const std::string& id_header,
                    const std::string& body) {
    rec.status = 400;
    rec.done_ns = now_ns();
    truth_.publish(std::move(rec));
    send_simple(c, 400, body, id_header, req.keep_alive);
}

bool Server::refuse_by_fault(Conn& c, const HttpRequest& req, Stream& s, const std::string& id_header,
                             ErrorFamily fam, bool whole_body, const FaultSpec*& fault) {
    fault = faults_.pick(s.rec.seq);
    if (!fault) return false;
    n_faults_.fetch_add(1, std::memory_order_relaxed);
    TruthRecord& rec = s.rec;
    rec.fault = fault_name(fault->kind);
    FaultKind k = fault->kind;
    // A whole body has no event to carry an in-stream error: the server's 500 instead.
    if (whole_body && k == FaultKind::error_event) k = FaultKind::http_500;
    if (k == FaultKind::http_429 || k == FaultKind::http_500 || k == FaultKind::http_503) {
        const int status = k == FaultKind::http_429 ? 429 : k == FaultKind::http_500 ? 500 : 503;
        const char* msg = status == 429 ? "Rate limit reached for requests. Please try again later."
                          : status == 500 ? "The server had an error while processing your request."
                                          : "The server is overloaded or not ready yet.";
        std::string headers = id_header;
        if (status == 429) headers += "Retry-After: " + std::to_string(fault->retry_after_s) + "\r\n";
        rec.status = status;
        rec.done_ns = now_ns();
        truth_.publish(std::move(rec));
        send_simple(c, status, error_body(fam, status, msg), headers, req.keep_alive);
        return true;
    }
    s.fault = k;
    return false;
}

void Server::place_fault(Stream& s, const FaultSpec* fault) {
    LoadState& load = s.load;
    if (fault && s.fault == FaultKind::slow_headers) {
        load.delay_ns = static_cast<int64_t>(fault->seconds * 1e9);
        if (!load.gap_ns.empty()) load.gap_ns[0] += load.delay_ns;
    }
    if (!fault || s.fault == FaultKind::none || s.fault == FaultKind::slow_headers) return;
    const size_t ne = s.events.size();
    const size_t group = static_cast<size_t>(std::max(1, cfg_.coalesce));
    size_t at = fault->after_events < 0 ? ne / 2 : std::min(static_cast<size_t>(fault->after_events), ne);
    if (s.fault == FaultKind::malformed && at == ne && ne > 0) at = ne - 1;  // it needs an event to precede
    s.fault_at = at == ne ? ne : at / group * group;
    if (s.fault == FaultKind::stall) {
        load.stall_at = s.fault_at;
        load.stall_ns = static_cast<int64_t>(fault->seconds * 1e9);
    }
    // A stream cut short ends when the write group at fault_at is due (write_group).
    if (s.plan.stream && ends_stream_early(s.fault) && s.fault_at < ne) load.planned = std::min(s.fault_at + group, ne);
}

void Server::start_generation(Conn& c, const ApiPath& api, HttpRequest& req, int64_t received_ns) {
    ChatRequest cr;
    auto s = open_request(c, req, received_ns, id_prefix(api.dialect), api_name(api), cr,
                          [&](const std::string& body, ChatRequest& out, std::string& err) {
                              return parse_chat_request(api, body, out, err);
                          });
    if (!s) return;
    TruthRecord& rec = s->rec;
    const uint64_t seq = rec.seq;
    const std::string id_header = "x-request-id: " + rec.id + "\r\n";
    const ErrorFamily fam = error_family(req.path);
    if (!cr.previous_response_id.empty()) {
        // The server holds the conversation: it goes between the instructions and the new items.
        const std::string* state = responses_.find(cr.previous_response_id);
        if (state == nullptr) {
            reject(c, req, std::move(rec), id_header,
                   error_body(fam, 400, "Previous response with id '" + cr.previous_response_id + "' not found."));
            return;
        }
        cr.prompt_text.insert(cr.instructions_chars, *state);
        cr.prompt_chars = static_cast<int64_t>(cr.prompt_text.size());
    }
    rec.stream = cr.stream;
    rec.prompt_tokens = estimate_prompt_tokens(cr);
    rec.images = cr.images.count;
    rec.image_tokens = cr.images.tokens;

    const FaultSpec* fault = nullptr;
    if (refuse_by_fault(c, req, *s, id_header, fam, !cr.stream, fault)) return;

    // What the response will carry.
    ResponsePlan& p = s->plan;
    p.api = api;
    p.seq = seq;
    p.draw = draw_key(seq, cr.prompt_text);
    p.id = rec.id;
    p.model = cr.model.empty() ? cfg_.model : cr.model;
    p.created_s = static_cast<int64_t>(std::time(nullptr));
    p.stream = cr.stream;
    p.include_usage = cr.include_usage;
    p.continuous_usage = cr.continuous_usage;
    p.usage_overbill = cfg_.usage_overbill;
    p.prompt_tokens = rec.prompt_tokens;
    // After the faults that refuse a request outright: a refused prompt is never computed, so never cached.
    rec.cached_tokens = prefix_cache_.lookup_insert(cr.prompt_text, rec.prompt_tokens);
    p.cached_tokens = cfg_.prefix_cache_tokens > 0 ? rec.cached_tokens : -1;
    metrics_.on_prompt(rec.prompt_tokens, rec.cached_tokens);
    p.max_tokens = cr.max_tokens;
    const int64_t cap = cfg_.max_output_tokens;
    const int64_t n = cr.max_tokens > 0 ? std::min(cr.max_tokens, cap) : std::min<int64_t>(cfg_.default_output_tokens, cap);
    p.hit_limit = cr.max_tokens > 0 && cr.max_tokens <= cap;
    const Dialect d = api.dialect;
    const bool reasoning_ok = d != Dialect::OpenAICompletions;
    const bool tools_ok = d == Dialect::OpenAIChat || d == Dialect::OpenAIResponses || d == Dialect::Anthropic;
    p.reasoning_tokens = reasoning_ok ? std::min<int64_t>(cfg_.reasoning_tokens, n) : 0;
    p.answer_tokens = n - p.reasoning_tokens;
    const AnswerKey* book_key = nullptr;
    if (cfg_.agent.turns > 0 && tools_ok && !cr.tool_name.empty() && p.answer_tokens > 0) {
        // The agent model (agent.hpp): tool calls for K turns, then the final answer.
        AgentView v = read_agent_view(api, req.body);
        rec.turn = v.turn;
        rec.tool_results = std::move(v.result_ids);
        rec.tool_result_chars = std::move(v.result_chars);
        if (v.turn < cfg_.agent.turns) {
            const int64_t per_call = std::max<int64_t>(1, p.answer_tokens / cfg_.agent.calls);
            p.calls = plan_agent_calls(cfg_.agent, v.tools, cfg_.seed, seq, d == Dialect::Anthropic, per_call);
            p.tool_call = true;
            p.hit_limit = false;
            p.answer_tokens = 0;
            for (const PlannedCall& call : p.calls) {
                p.answer_tokens += call.pieces();
                rec.tool_calls.push_back(TruthToolCall{call.id, call.name, call.arguments, call.valid});
            }
        } else {
            book_key = cfg_.answers.find(cr.last_text);
            if (!book_key && !v.task_text.empty()) book_key = cfg_.answers.find(v.task_text);
        }
    } else if (cfg_.tool_calls && tools_ok && p.answer_tokens > 0) {
        p.tool_call = true;
        p.calls.push_back(legacy_call(cr.tool_name.empty() ? "get_weather" : cr.tool_name, seq, d == Dialect::Anthropic,
                                      p.answer_tokens));
    } else if (p.answer_tokens > 0) {
        book_key = cfg_.answers.find(cr.last_text);
    }
    if (d == Dialect::OpenAIResponses) {
        p.previous_response_id = cr.previous_response_id;
    }
    if (d == Dialect::OpenAIResponses && cr.store) {
        // This response's state: its conversation after the instructions, then its output (a
        // stand-in of kBytesPerToken bytes a token, so a later prompt counts its tokens).
        const size_t out_bytes =
            static_cast<size_t>(p.reasoning_tokens + p.answer_tokens) * static_cast<size_t>(PrefixCache::kBytesPerToken);
        std::string state = cr.prompt_text.substr(cr.instructions_chars);
        for (size_t i = 0; i < out_bytes; ++i) state += static_cast<char>('a' + (seq + i) % 26);
        responses_.store(rec.id, std::move(state));
    }
    s->fmt = Formatter::make(p);
    s->answer = book_key;

    // When it happens: gaps at a batch of one, drawn now; the load model turns them into due
    // times once the request has a batch slot (batch.hpp).
    std::mt19937_64 rng = request_rng(cfg_.seed, p.draw);
    const int64_t ttft = draw_ns(cfg_.ttft_dist, cfg_.ttft_ns, cfg_.ttft_sd_ns, rng) + cfg_.prefill_ns_per_token * (p.prompt_tokens - rec.cached_tokens) +
                         ttft_ramp_ns(cfg_.ttft_ramp_ns_per_s, received_ns - start_ns_);
    s->events = build_schedule(cfg_, 0, p.reasoning_tokens, p.answer_tokens, p.tool_call ? TokKind::tool : TokKind::content, rng);
    const size_t ne = s->events.size();
    LoadState& load = s->load;
    load.seq = seq;
    load.conn_id = c.id;
    load.gap_ns.resize(ne);
    for (size_t i = 0; i < ne; ++i) load.gap_ns[i] = i == 0 ? ttft : s->events[i].due_ns - s->events[i - 1].due_ns;
    load.planned = ne;
    place_fault(*s, fault);
    if (p.stream) {
        rec.tokens.resize(ne);
        rec.kinds.resize(ne);
        for (size_t i = 0; i < ne; ++i) {
            rec.tokens[i] = s->events[i].tokens;
            rec.kinds[i] = truth_kind(s->events[i].kind);
        }
        rec.sent_ns.assign(ne, 0);
        rec.planned_events = static_cast<int64_t>(ne);
    } else {
        // One body carrying every token, due when the last token would have been.
        rec.tokens = {static_cast<int32_t>(p.reasoning_tokens + p.answer_tokens)};
        rec.kinds = {truth_kind(p.answer_tokens > 0 ? (p.tool_call ? TokKind::tool : TokKind::content) : TokKind::reasoning)};
        rec.sent_ns = {0};
        rec.planned_events = 1;
    }
    launch(c, req, std::move(s), received_ns);
}

void Server::launch(Conn& c, const HttpRequest& req, std::unique_ptr<Stream> s, int64_t received_ns) {
    s->rec.status = 200;
    s->chunked = req.minor_version == 1;
    c.stream = std::move(s);
    n_streams_.fetch_add(1, std::memory_order_relaxed);
    std::vector<uint64_t> admitted;
    model_.arrive(c.stream->load, received_ns, admitted);
    arm_admitted(admitted, c.id);
    if (c.stream->load.admitted()) on_stream_timer(c);
}

void Server::advance_model(int64_t now) {
    std::vector<uint64_t> admitted;
    model_.advance(now, admitted);
    arm_admitted(admitted);
}

void Server::arm_admitted(const std::vector<uint64_t>& conn_ids, uint64_t except) {
    for (uint64_t id : conn_ids) {
        if (id == except) continue;
        Conn* c = find(id);
        if (c && c->stream) arm_timer(*c);
    }
}

void Server::frame(const Stream& s, const std::string& payload, std::string& out) {
    if (payload.empty()) return;
    if (s.chunked) {
        append_chunk(out, payload);
    } else {
        out += payload;
    }
}

void Server::queue_payload(Conn& c, const std::string& payload, bool end) {
    // Framed straight into the connection's output: no copy on the way.
    const size_t before = c.out.size();
    frame(*c.stream, payload, c.out);
    if (end) end_stream_bytes(c, c.out);
    c.queued_total += c.out.size() - before;
}

void Server::end_stream_bytes(Conn& c, std::string& bytes) {
    Stream& s = *c.stream;
    if (s.chunked) {
        bytes += "0\r\n\r\n";
    } else {
        c.close_after = true;  // HTTP/1.0: the end of the body is the end of the connection
    }
    s.ended = true;
}

void Server::on_stream_timer(Conn& c) {
    const uint64_t id = c.id;
    Stream& s = *c.stream;
    const int64_t now = now_ns();
    advance_model(now);
    const size_t ne = s.events.size();
    if (!s.plan.stream) {
        if (s.load.decided < ne || now < (ne ? s.load.due_ns[ne - 1] : s.load.headers_due_ns)) {
            arm_timer(c);
            return;
        }
        if (s.fault == FaultKind::disconnect) {  // the body never comes
            finish_stream(c, false);
            close_conn(c);
            return;
        }
        decide_answer(s);
        StreamTimes t{s.rec.received_ns, ne ? s.load.due_ns[0] : now, now};
        std::string body;
        s.fmt->full_body(body, t);
        if (s.fault == FaultKind::malformed) body.resize(body.size() / 2);  // JSON cut short, its length told true
        std::string& h = frame_;
        h.clear();
        append_status_line(h, 200);
        h += "Content-Type: application/json\r\nContent-Length: ";
        json_int(h, static_cast<int64_t>(body.size()));
        h += "\r\nx-request-id: " + s.rec.id + "\r\n";
        if (!c.keep_alive) h += "Connection: close\r\n";
        h += "\r\n";
        h += body;
        queue(c, h);
        add_mark(c, Mark::headers, 0, 0);
        add_mark(c, Mark::events, 0, 1);
        add_mark(c, Mark::done, 0, 0);
        s.ended = true;
        if (!c.keep_alive) c.close_after = true;
        if (!flush(c)) return;
        after_output(c);
        return;
    }
    if (!s.headers_sent) {
        if (now < s.load.headers_due_ns) {
            arm_timer(c);
            return;
        }
        std::string& h = frame_;
        h.clear();
        append_status_line(h, 200);
        h += "Content-Type: ";
        h += s.fmt->stream_content_type();
        h += "\r\nCache-Control: no-cache\r\nx-request-id: " + s.rec.id + "\r\n";
        h += s.chunked ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n";
        if (s.chunked && !c.keep_alive) h += "Connection: close\r\n";
        h += "\r\n";
        scratch_.clear();
        s.fmt->begin(scratch_);
        frame(s, scratch_, h);
        queue(c, h);
        add_mark(c, Mark::headers, 0, 0);
        s.headers_sent = true;
        s.last_write_ns = now;
        if (!flush(c)) return;
    }
    write_group(c, now);
    Conn* still = find(id);
    if (!still || !still->stream) return;
    Stream& s2 = *still->stream;
    if (!s2.ended && cfg_.keepalive_ns > 0 && s2.fmt->is_sse()) {
        const int64_t t = now_ns();
        if (t >= s2.last_write_ns + cfg_.keepalive_ns) {
            scratch_.clear();
            s2.fmt->keepalive(scratch_);
            queue_payload(*still, scratch_, false);
            s2.last_write_ns = t;
            ++s2.rec.keepalives;
            if (!flush(*still)) return;
        }
    }
    if (s2.ended) {
        after_output(*still);
    } else {
        arm_timer(*still);
    }
}

void Server::write_group(Conn& c, int64_t now) {
    Stream& s = *c.stream;
    const size_t ne = s.events.size();
    const size_t group = static_cast<size_t>(std::max(1, cfg_.coalesce));
    const LoadState& load = s.load;
    while (!s.ended) {
        size_t end = std::min(s.next + group, ne);
        if (s.next < ne && (end > load.decided || load.due_ns[end - 1] > now)) {
            // Not due yet, or not yet decided (with a batch slowdown each gap is decided when
            // the event before it is due); refresh the clock once, since writes before may
            // have taken time.
            now = now_ns();
            if (end > load.decided) advance_model(now);
            if (end > load.decided || load.due_ns[end - 1] > now) return;
        }
        if (cfg_.coalesce == 0) {
            // Everything already due goes in this write, as a server whose generation
            // outruns its socket flushes several events at once.
            while (end < load.decided && load.due_ns[end] <= now && !(end == s.fault_at && s.fault != FaultKind::none)) ++end;
        }
        if (s.next == s.fault_at && ends_stream_early(s.fault)) {
            if (s.fault == FaultKind::disconnect) {
                s.rec.done_ns = now_ns();
                finish_stream(c, false);
                close_conn(c);
                return;
            }
            scratch_.clear();
            s.fmt->error_event(scratch_);
            queue_payload(c, scratch_, true);
            add_mark(c, Mark::done, 0, 0);
            flush(c);
            return;
        }
        if (s.next >= ne) return;  // (only when the stream has no events and no end yet)
        decide_answer(s);
        scratch_.clear();
        if (s.fault == FaultKind::malformed && s.next == s.fault_at) s.fmt->malformed_event(scratch_);
        for (size_t i = s.next; i < end; ++i) s.fmt->tokens(scratch_, s.events[i].kind, s.events[i].tokens);
        const size_t first = s.next;
        s.next = end;
        const bool last = end == ne && !(s.fault_at == ne && ends_stream_early(s.fault));
        if (last) {
            StreamTimes t{s.rec.received_ns, s.sent_events ? s.rec.sent_ns[0] : load.due_ns[0], now_ns(),
                          load.due_ns[0], load.due_ns[ne - 1]};
            s.fmt->finish(scratch_, t);
        }
        queue_payload(c, scratch_, last);
        add_mark(c, Mark::events, static_cast<uint32_t>(first), static_cast<uint32_t>(end - first));
        if (last) add_mark(c, Mark::done, 0, 0);
        if (!flush(c)) return;
        s.last_write_ns = now_ns();
        now = s.last_write_ns;
    }
}

void Server::arm_timer(Conn& c) {
    Stream& s = *c.stream;
    const LoadState& load = s.load;
    if (!load.admitted()) return;  // queued: the model arms it when a slot frees
    int64_t t = std::numeric_limits<int64_t>::max();
    const size_t ne = s.events.size();
    // An event not yet decided: wake when the last decided one is due, which decides the next.
    auto due = [&](size_t i) { return load.due_ns[std::min(i, load.decided - 1)]; };
    if (!s.plan.stream) {
        t = ne ? due(ne - 1) : load.headers_due_ns;
    } else if (!s.headers_sent) {
        t = load.headers_due_ns;
    } else if (!s.ended) {
        const size_t group = static_cast<size_t>(std::max(1, cfg_.coalesce));
        if (s.next < ne) t = due(std::min(s.next + group, ne) - 1);
        if (cfg_.keepalive_ns > 0 && s.fmt->is_sse()) t = std::min(t, s.last_write_ns + cfg_.keepalive_ns);
    }
    if (t == std::numeric_limits<int64_t>::max()) return;
    loop_->schedule(t, c.id, ++c.timer_gen);
}

void Server::decide_answer(Stream& s) {
    if (s.answer_decided) return;
    s.answer_decided = true;
    if (s.answer == nullptr) return;
    const int64_t batch = s.load.batched > 0 ? s.load.batch[0] : 1;
    const bool right = cfg_.answers.draw_right(cfg_.seed, s.plan.draw, batch);
    s.rec.answer = right ? "right" : "wrong";
    s.fmt->set_answer(right ? s.answer->right : s.answer->wrong);
}

void Server::finish_stream(Conn& c, bool completed) {
    Stream& s = *c.stream;
    TruthRecord& r = s.rec;
    if (r.done_ns == 0) r.done_ns = now_ns();
    const size_t sent = s.plan.stream ? s.sent_events : (r.sent_ns[0] ? 1 : 0);
    const size_t ne = s.events.size();
    // Its slot (or place in the queue) is free from now; not before the due time of the last
    // event sent (a tie of clock reads at most), so that every event sent has its batch size.
    const LoadState& load = s.load;
    const size_t last = s.plan.stream ? sent : (sent ? ne : 0);
    int64_t leave_at = now_ns();
    if (last > 0) leave_at = std::max(leave_at, load.due_ns[last - 1] + 1);
    std::vector<uint64_t> admitted;
    model_.leave(s.load, leave_at, admitted);
    r.admitted_ns = load.admitted_ns;
    r.released_ns = load.released_ns;
    r.queued_ns = (load.admitted() ? load.admitted_ns : r.done_ns) - r.received_ns;
    if (s.plan.stream) {
        r.scheduled_ns.assign(load.due_ns.begin(), load.due_ns.begin() + static_cast<std::ptrdiff_t>(sent));
        r.batch.assign(load.batch.begin(), load.batch.begin() + static_cast<std::ptrdiff_t>(sent));
    } else if (sent) {
        r.scheduled_ns = {ne ? load.due_ns[ne - 1] : load.headers_due_ns};
        r.batch = {ne ? load.batch[ne - 1] : 0};
    }
    r.sent_ns.resize(sent);
    r.tokens.resize(sent);
    r.kinds.resize(sent);
    r.output_tokens = 0;
    r.reasoning_tokens = 0;
    for (size_t i = 0; i < sent; ++i) {
        r.output_tokens += r.tokens[i];
        if (r.kinds[i] == truth_kind(TokKind::reasoning)) r.reasoning_tokens += r.tokens[i];
    }
    if (!s.plan.stream && sent) r.reasoning_tokens = s.plan.reasoning_tokens;
    // The answer rides on the content's last token: sent when every content token was.
    r.answer_sent = !r.answer.empty() && r.output_tokens - r.reasoning_tokens == s.plan.answer_tokens;
    r.completed = completed && static_cast<int64_t>(sent) == r.planned_events;
    metrics_.on_finish(r);
    truth_.publish(std::move(r));
    const bool close = !c.keep_alive || !s.chunked;
    c.stream.reset();
    c.marks.clear();
    n_streams_.fetch_sub(1, std::memory_order_relaxed);
    if (close) c.close_after = true;
    arm_admitted(admitted);
}

}  // namespace pytps
