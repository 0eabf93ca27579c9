#include "emulator/schedule.hpp"

#include <algorithm>
#include <cmath>

namespace pytps {

namespace {
uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}
}  // namespace

std::mt19937_64 request_rng(uint64_t seed, uint64_t seq) {
    return std::mt19937_64(splitmix64(splitmix64(seed) ^ seq));
}

int64_t ttft_ramp_ns(int64_t ramp_ns_per_s, int64_t since_start_ns) {
    if (ramp_ns_per_s <= 0 || since_start_ns <= 0) return 0;
    const long double extra = static_cast<long double>(ramp_ns_per_s) * static_cast<long double>(since_start_ns) / 1e9L;
    // A day's worth of TTFT is already no server; the cap keeps the due times far from overflow.
    constexpr long double cap = 86'400'000'000'000.0L;
    return static_cast<int64_t>(extra < cap ? extra : cap);
}

int64_t draw_ns(Dist dist, int64_t mean_ns, int64_t sd_ns, std::mt19937_64& rng) {
    if (mean_ns <= 0) return 0;
    if (sd_ns <= 0 || dist == Dist::fixed || dist == Dist::replay) return mean_ns;
    double v;
    if (dist == Dist::normal) {
        std::normal_distribution<double> d(static_cast<double>(mean_ns), static_cast<double>(sd_ns));
        v = d(rng);
    } else {
        const double m = static_cast<double>(mean_ns), s = static_cast<double>(sd_ns);
        const double sigma2 = std::log1p((s * s) / (m * m));
        std::lognormal_distribution<double> d(std::log(m) - sigma2 / 2, std::sqrt(sigma2));
        v = d(rng);
    }
    return v < 0 ? 0 : static_cast<int64_t>(v);
}

std::vector<TokenEvent> build_schedule(const EmulatorConfig& c, int64_t first_ns, int64_t reasoning,
                                       int64_t answer, TokKind answer_kind, std::mt19937_64& rng) {
    const int64_t k = std::max(1, c.tokens_per_event);
    std::vector<TokenEvent> ev;
    ev.reserve(static_cast<size_t>((reasoning + k - 1) / k + (answer + k - 1) / k));
    for (int64_t left = reasoning; left > 0; left -= k)
        ev.push_back(TokenEvent{0, static_cast<int32_t>(std::min(left, k)), TokKind::reasoning});
    for (int64_t left = answer; left > 0; left -= k)
        ev.push_back(TokenEvent{0, static_cast<int32_t>(std::min(left, k)), answer_kind});
    int64_t t = first_ns;
    const size_t nrep = c.itl_replay_ns.size();
    for (size_t i = 0; i < ev.size(); ++i) {
        if (i > 0) {
            if (c.itl_dist == Dist::replay && nrep) {
                t += c.itl_replay_ns[(i - 1) % nrep];
            } else {
                t += draw_ns(c.itl_dist, c.itl_ns, c.itl_sd_ns, rng);
            }
        }
        ev[i].due_ns = t;
    }
    return ev;
}

const FaultSpec* FaultPicker::pick(uint64_t seq) const {
    if (faults_.empty()) return nullptr;
    // Its own stream (seed ^ a constant) so adding a fault never changes the timing draws.
    std::mt19937_64 rng = request_rng(seed_ ^ 0xFA017ULL, seq);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (const FaultSpec& f : faults_) {
        const double draw = u(rng);  // drawn for every spec so each spec's draws are stable
        if (f.every > 0 && seq % static_cast<uint64_t>(f.every) == 0) return &f;
        if (f.probability > 0 && draw < f.probability) return &f;
    }
    return nullptr;
}

}  // namespace pytps

namespace pytps {

namespace {
struct FaultNameEntry {
    FaultKind kind;
    const char* name;
};
const FaultNameEntry kFaultNames[] = {
    {FaultKind::none, "none"},           {FaultKind::http_429, "http_429"},   {FaultKind::http_500, "http_500"},
    {FaultKind::http_503, "http_503"},   {FaultKind::disconnect, "disconnect"}, {FaultKind::malformed, "malformed_json"},
    {FaultKind::error_event, "error_event"}, {FaultKind::stall, "stall"},     {FaultKind::slow_headers, "slow_headers"},
};
}  // namespace

const char* fault_name(FaultKind k) {
    for (const auto& e : kFaultNames)
        if (e.kind == k) return e.name;
    return "none";
}

FaultKind fault_from_name(const std::string& name) {
    for (const auto& e : kFaultNames)
        if (name == e.name) return e.kind;
    return FaultKind::none;
}

}  // namespace pytps
