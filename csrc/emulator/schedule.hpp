// The timing plan of one response and the choice of faults: pure functions of the
// configuration, the request's sequence number and the seed, so a run can be replayed.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "emulator/config.hpp"
#include "emulator/formats.hpp"

namespace pytps {

// A generator for request `seq`: the same seed and seq give the same draws whatever the
// interleaving of concurrent requests.
std::mt19937_64 request_rng(uint64_t seed, uint64_t seq);

// A duration drawn from `dist` with mean `mean_ns` and standard deviation `sd_ns`
// (lognormal: of the duration itself, not of its log), never negative.
int64_t draw_ns(Dist dist, int64_t mean_ns, int64_t sd_ns, std::mt19937_64& rng);

// A drifting server's extra TTFT: `ramp_ns_per_s` for each second of `since_start_ns` (0 before
// the start or without a ramp; saturating instead of overflowing).
int64_t ttft_ramp_ns(int64_t ramp_ns_per_s, int64_t since_start_ns);

struct TokenEvent {
    int64_t due_ns;
    int32_t tokens;
    TokKind kind;
};

// Events of a response: reasoning tokens then answer tokens, `tokens_per_event` per event
// (the last of each phase may carry fewer). Event 0 is due at `first_ns`; each next one
// one inter-event gap later, added to the previous due time (an absolute schedule: lateness
// in writing never shifts later events).
std::vector<TokenEvent> build_schedule(const EmulatorConfig& c, int64_t first_ns, int64_t reasoning,
                                       int64_t answer, TokKind answer_kind, std::mt19937_64& rng);

// Picks the fault of generation request `seq` (1-based): the first spec in order whose
// `every` divides seq or whose probability draw hits. nullptr: no fault.
class FaultPicker {
public:
    explicit FaultPicker(const EmulatorConfig& c) : faults_(c.faults), seed_(c.seed) {}
    const FaultSpec* pick(uint64_t seq) const;

private:
    std::vector<FaultSpec> faults_;
    uint64_t seed_;
};

}  // namespace pytps
