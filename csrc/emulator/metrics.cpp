// The emulator's /metrics (metrics.hpp): counters kept by the loop thread as requests start and
// finish, rendered on the same thread when a scrape arrives.
#include "emulator/metrics.hpp"

#include <cstdio>

#include "emulator/json_write.hpp"
#include "emulator/server.hpp"

namespace pytps {

void ServerMetrics::on_prompt(int64_t prompt_tokens, int64_t cached_tokens) {
    prompt_tokens_ += static_cast<uint64_t>(prompt_tokens);
    prefix_queries_ += static_cast<uint64_t>(prompt_tokens);
    prefix_hits_ += static_cast<uint64_t>(cached_tokens);
}

void ServerMetrics::on_finish(const TruthRecord& r) {
    generation_tokens_ += static_cast<uint64_t>(r.output_tokens);
    finished_ += 1;
    if (r.admitted_ns > 0 && r.released_ns >= r.admitted_ns) closed_slot_ns_ += r.released_ns - r.admitted_ns;
    if (!r.sent_ns.empty() && r.sent_ns[0] > 0) {
        const double ttft_s = static_cast<double>(r.sent_ns[0] - r.received_ns) / 1e9;
        ttft_count_ += 1;
        ttft_sum_s_ += ttft_s;
        for (size_t i = 0; i < kTtftBounds.size(); ++i)
            if (ttft_s <= kTtftBounds[i]) ttft_buckets_[i] += 1;
    }
}

namespace {
void line(std::string& out, const char* name, const std::string& labels, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.17g\n", value);
    out += name;
    out += labels;
    out += buf;
}
void head(std::string& out, const char* name, const char* type, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}
}  // namespace

std::string ServerMetrics::render(const MetricsNow& now, const std::string& model, const PowerModel& power) const {
    std::string out;
    std::string m = "{model_name=";
    json_str(m, model);  // a JSON string is a valid Prometheus label value for the names we serve
    m += "}";
    head(out, "vllm:num_requests_running", "gauge", "Requests holding a batch slot (the load model's batch).");
    line(out, "vllm:num_requests_running", m, static_cast<double>(now.running));
    head(out, "vllm:num_requests_waiting", "gauge", "Requests queued for a batch slot.");
    line(out, "vllm:num_requests_waiting", m, static_cast<double>(now.waiting));
    head(out, "vllm:prompt_tokens_total", "counter", "Prompt tokens of generation requests (estimated as the emulator counts them).");
    line(out, "vllm:prompt_tokens_total", m, static_cast<double>(prompt_tokens_));
    head(out, "vllm:generation_tokens_total", "counter", "Output tokens written.");
    line(out, "vllm:generation_tokens_total", m, static_cast<double>(generation_tokens_));
    head(out, "vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
    line(out, "vllm:prefix_cache_queries_total", m, static_cast<double>(prefix_queries_));
    head(out, "vllm:prefix_cache_hits_total", "counter", "Prompt tokens the prefix cache served.");
    line(out, "vllm:prefix_cache_hits_total", m, static_cast<double>(prefix_hits_));
    head(out, "vllm:request_success_total", "counter", "Generation requests finished.");
    line(out, "vllm:request_success_total", m, static_cast<double>(finished_));
    head(out, "vllm:time_to_first_token_seconds", "histogram",
         "From the request's last byte read to the first token's write returning.");
    std::string b;
    for (size_t i = 0; i < kTtftBounds.size(); ++i) {
        char le[40];
        std::snprintf(le, sizeof le, "{le=\"%g\",model_name=", kTtftBounds[i]);
        b = le;
        json_str(b, model);
        b += "}";
        line(out, "vllm:time_to_first_token_seconds_bucket", b, static_cast<double>(ttft_buckets_[i]));
    }
    b = "{le=\"+Inf\",model_name=";
    json_str(b, model);
    b += "}";
    line(out, "vllm:time_to_first_token_seconds_bucket", b, static_cast<double>(ttft_count_));
    line(out, "vllm:time_to_first_token_seconds_count", m, static_cast<double>(ttft_count_));
    line(out, "vllm:time_to_first_token_seconds_sum", m, ttft_sum_s_);
    if (power.on()) {
        const double slot_s = static_cast<double>(closed_slot_ns_ + now.open_slot_ns) / 1e9;
        const double energy_j = power.idle_w * static_cast<double>(now.now_ns - start_ns_) / 1e9 + power.per_stream_w * slot_s;
        const std::string gpu = "{gpu=\"0\",modelName=\"pytps-emulator\"}";
        head(out, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W): the emulator's power model.");
        line(out, "DCGM_FI_DEV_POWER_USAGE", gpu, power.idle_w + power.per_stream_w * static_cast<double>(now.running));
        head(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since start (in mJ).");
        line(out, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu, energy_j * 1e3);
    }
    return out;
}

void Server::serve_metrics(Conn& c, HttpRequest& req) {
    if (req.method != "GET") {
        send_simple(c, 405, error_body(ErrorFamily::openai, 405, "Method " + req.method + " is not allowed on /metrics; use GET."),
                    "Allow: GET\r\n", req.keep_alive);
        return;
    }
    const int64_t now = now_ns();
    advance_model(now);  // the batch and the queue as of now
    MetricsNow at;
    at.now_ns = now;
    at.running = static_cast<int64_t>(model_.decoding());
    at.waiting = static_cast<int64_t>(model_.queued());
    for (const auto& [id, conn] : conns_) {
        const Stream* s = conn->stream.get();
        if (s == nullptr || !s->load.admitted()) continue;
        const int64_t until = s->load.released_ns > 0 ? s->load.released_ns : now;
        if (until > s->load.admitted_ns) at.open_slot_ns += until - s->load.admitted_ns;
    }
    const std::string body = metrics_.render(at, cfg_.model, PowerModel{cfg_.power_idle_w, cfg_.power_per_stream_w});
    send_simple(c, 200, body, "", req.keep_alive, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace pytps
