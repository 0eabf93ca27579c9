// The routes that answer with one JSON body (embeddings, rerank): a request planned as a
// non-streamed response of one event, due base + per-token x input tokens after admission, so
// the load model (max_batch, the queue) and the truth record work as for generation.
#include <ctime>

#include "core/clock.hpp"
#include "emulator/embeddings.hpp"
#include "emulator/json_write.hpp"
#include "emulator/server.hpp"

namespace pytps {

namespace {

class BodyFormatter : public Formatter {
public:
    BodyFormatter(const ResponsePlan& plan, const BodyApiPath& api, BodyRequest req, int64_t dim, uint64_t seed)
        : Formatter(plan), api_(api), req_(std::move(req)), dim_(dim), seed_(seed) {}

    void begin(std::string&) override {}
    void tokens(std::string&, TokKind, int64_t) override {}
    void finish(std::string&, const StreamTimes&) override {}
    void error_event(std::string&) override {}
    void malformed_event(std::string&) override {}
    void full_body(std::string& out, const StreamTimes& t) override {
        out += body_response(api_, req_, p_.id, p_.model, dim_, seed_, p_.prompt_tokens,
                             t.last_token_ns - t.received_ns);
    }

private:
    const BodyApiPath& api_;
    BodyRequest req_;
    int64_t dim_;
    uint64_t seed_;
};

}  // namespace

void Server::start_body_api(Conn& c, const BodyApiPath& api, HttpRequest& req, int64_t received_ns) {
    BodyRequest br;
    auto s = open_request(c, req, received_ns, api.api == BodyApi::Rerank ? "rerank-" : "embd-", body_api_name(api), br,
                          [&](const std::string& body, BodyRequest& out, std::string& err) {
                              return parse_body_request(api, body, out, err);
                          });
    if (!s) return;
    TruthRecord& rec = s->rec;
    const std::string id_header = "x-request-id: " + rec.id + "\r\n";
    const ErrorFamily fam = error_family(req.path);
    const std::vector<int64_t> tokens = body_input_tokens(api, br);
    for (int64_t t : tokens) rec.prompt_tokens += t;
    rec.inputs = static_cast<int64_t>(br.inputs.size());
    const int64_t dim = api.api == BodyApi::Rerank ? 0 : br.dimensions > 0 ? br.dimensions : cfg_.embedding_dim;
    rec.dimensions = dim;
    if (api.api == BodyApi::Rerank)
        rec.results = br.top_n < 0 ? rec.inputs : std::min<int64_t>(rec.inputs, br.top_n);
    else
        rec.results = rec.inputs;
    const FaultSpec* fault = nullptr;
    if (refuse_by_fault(c, req, *s, id_header, fam, true, fault)) return;

    ResponsePlan& p = s->plan;
    p.seq = rec.seq;
    p.draw = rec.seq;
    p.id = rec.id;
    p.model = br.model.empty() ? cfg_.model : br.model;
    p.created_s = static_cast<int64_t>(std::time(nullptr));
    p.stream = false;
    p.prompt_tokens = rec.prompt_tokens;
    p.usage_overbill = cfg_.usage_overbill;
    s->fmt = std::make_unique<BodyFormatter>(p, api, std::move(br), dim, cfg_.seed);

    // One event carrying no token, due base + per-token x input tokens after admission.
    s->events = {TokenEvent{0, 0, TokKind::content}};
    LoadState& load = s->load;
    load.seq = rec.seq;
    load.conn_id = c.id;
    load.gap_ns = {cfg_.embed_ns + cfg_.embed_ns_per_token * rec.prompt_tokens};
    load.planned = 1;
    place_fault(*s, fault);
    rec.tokens = {0};
    rec.kinds = {0};
    rec.sent_ns = {0};
    rec.planned_events = 1;
    launch(c, req, std::move(s), received_ns);
}

}  // namespace pytps
