// The emulator's /metrics: its own truth as Prometheus text exposition, under vLLM's metric
// names (requests running and waiting from the load model, prompt and generation token
// counters, prefix-cache hits and queries, a TTFT histogram) and, with a power model, NVIDIA
// DCGM's (power in W, an energy counter in mJ). Every figure is exact, so pytps's server-metrics
// figures are tested against it (docs/emulator.md, "Metrics").
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "emulator/truth.hpp"

namespace pytps {

// The power model: idle_w always, plus per_stream_w for each request holding a batch slot.
// The energy of an interval is then idle_w x its length + per_stream_w x the slot-time in it.
struct PowerModel {
    double idle_w = 0.0;
    double per_stream_w = 0.0;
    bool on() const { return idle_w > 0.0 || per_stream_w > 0.0; }
};

// What a scrape reads besides the counters: the load model now.
struct MetricsNow {
    int64_t now_ns = 0;
    int64_t running = 0;          // requests holding a batch slot
    int64_t waiting = 0;          // requests queued for one
    int64_t open_slot_ns = 0;     // slot-time so far of the requests still holding (or just freed) one
};

class ServerMetrics {
public:
    // TTFT histogram bounds in seconds (vLLM's, up to 10 s).
    static constexpr std::array<double, 16> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                           0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};

    void start(int64_t t_ns) { start_ns_ = t_ns; }
    // A generation request's prompt, after the prefix cache looked it up.
    void on_prompt(int64_t prompt_tokens, int64_t cached_tokens);
    // A finished request (every token it wrote, its TTFT, its slot-time).
    void on_finish(const TruthRecord& r);
    // The exposition at `now`.
    std::string render(const MetricsNow& now, const std::string& model, const PowerModel& power) const;

private:
    int64_t start_ns_ = 0;
    uint64_t prompt_tokens_ = 0, generation_tokens_ = 0, prefix_hits_ = 0, prefix_queries_ = 0, finished_ = 0;
    int64_t closed_slot_ns_ = 0;  // slot-time of requests that left
    std::array<uint64_t, kTtftBounds.size()> ttft_buckets_{};
    uint64_t ttft_count_ = 0;
    double ttft_sum_s_ = 0.0;
};

}  // namespace pytps
