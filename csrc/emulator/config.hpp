// Settings of the streaming emulator: timing model, output shape and faults. Plain data,
// filled by the bindings and validated there (the emulator trusts it).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/agent.hpp"
#include "emulator/answers.hpp"

namespace pytps {

// How a duration (TTFT or the gap between events) is drawn per request / per event.
enum class Dist : uint8_t { fixed, normal, lognormal, replay };

enum class FaultKind : uint8_t {
    none,
    http_429,      // 429 with Retry-After, before any stream starts
    http_500,
    http_503,
    disconnect,    // connection closed mid-stream without the terminating chunk
    malformed,     // one event whose JSON is cut short, then the stream goes on
    error_event,   // an in-stream error event in the provider's format, then the stream ends
    stall,         // a pause of `seconds` after `after_events` events; later events shift by it
    slow_headers,  // response headers (and so everything) late by `seconds`
};

const char* fault_name(FaultKind k);
// Returns FaultKind::none when the name is unknown.
FaultKind fault_from_name(const std::string& name);

struct FaultSpec {
    FaultKind kind = FaultKind::none;
    double probability = 0.0;  // chance per request, drawn from the seeded generator
    int64_t every = 0;         // or: every Nth generation request (1-based count)
    double seconds = 1.0;      // stall / slow_headers duration
    int64_t after_events = -1; // disconnect / malformed / error_event / stall position; -1: half the events
    int64_t retry_after_s = 1; // http_429's Retry-After
};

// The key of an uploaded audio file in EmulatorConfig::transcripts: FNV-1a 64 of its bytes.
inline uint64_t audio_key(const std::string& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}

struct EmulatorConfig {
    std::string host = "127.0.0.1";
    int port = 0;

    Dist ttft_dist = Dist::fixed;
    int64_t ttft_ns = 50'000'000;
    int64_t ttft_sd_ns = 0;
    // A drifting server: every request's TTFT grows by this many ns per second since the server
    // started (0: none). Models a server that slows down during a benchmark (thermal throttling,
    // a neighbour's load, a growing cache), which a capacity search must report as unstable.
    int64_t ttft_ramp_ns_per_s = 0;
    // A server that bills more than it streams: usage reports this share more output tokens (0: none).
    double usage_overbill = 0.0;
    Dist itl_dist = Dist::fixed;
    int64_t itl_ns = 500'000;  // gap between consecutive token events
    int64_t itl_sd_ns = 0;
    std::vector<int64_t> itl_replay_ns;  // cycled when itl_dist == replay
    int64_t prefill_ns_per_token = 0;  // added to TTFT per prompt token not served by the prefix cache
    // Embeddings and rerank (emulator/embeddings.hpp): the answer is due embed_ns +
    // embed_ns_per_token x input tokens after admission; vectors have embedding_dim components
    // unless the request asks for `dimensions`.
    int64_t embed_ns = 2'000'000;
    int64_t embed_ns_per_token = 10'000;
    int64_t embedding_dim = 384;
    // The prefix cache (emulator/prefix_cache.hpp): capacity in tokens (0: none) and block size.
    int64_t prefix_cache_tokens = 0;
    int64_t prefix_cache_block_tokens = 16;
    // Load (emulator/batch.hpp): at most max_batch requests decode at once, the rest wait in a
    // FIFO queue (0: no limit); each gap grows by batch_slowdown x (batch size - 1) of itself.
    int64_t max_batch = 0;
    double batch_slowdown = 0.0;
    // The power model of /metrics (emulator/metrics.hpp): W always, and W per request holding a
    // batch slot; both 0: no power metrics.
    double power_idle_w = 0.0;
    double power_per_stream_w = 0.0;

    int tokens_per_event = 1;
    int coalesce = 1;            // consecutive events put in one write (due at the last one's time);
                                 // 0: every event already due when a write is made
    int reasoning_tokens = 0;    // taken from the output budget before the answer
    bool tool_calls = false;     // the answer is one tool call whose arguments stream as deltas
    AgentSettings agent;         // the agent model (agent.hpp); turns 0: off
    int64_t keepalive_ns = 0;    // 0: none; else an SSE comment after this much write silence
    int max_output_tokens = 4096;
    int default_output_tokens = 64;
    std::string model = "pytps-emulator";

    // The audio routes (emulator/audio_route.cpp). Speech: 16-bit mono PCM at speech_sample_rate,
    // speech_words_per_s words of input per second of audio, written in chunks of speech_chunk_ms
    // audio each, one every speech_chunk_ms x speech_rtf after the first (due at TTFT). Speech to
    // text: the transcript of a known audio file (by its bytes' FNV-1a hash) or seeded words, one
    // word in stt_word_error_rate replaced by a word no reference has, streamed over
    // audio seconds / stt_rtfx after TTFT; stt_vllm_shape: vLLM's chat-style chunks, not OpenAI's
    // transcript.text.delta events.
    int64_t speech_sample_rate = 24000;
    double speech_words_per_s = 2.5;
    double speech_chunk_ms = 40.0;
    double speech_rtf = 0.5;
    double stt_rtfx = 20.0;
    double stt_word_error_rate = 0.0;
    int stt_words_per_event = 1;
    bool stt_vllm_shape = false;
    std::unordered_map<uint64_t, std::string> transcripts;
    // Compressed speech (response_format mp3, opus, aac, flac): one clip per format, encoded by
    // the caller (pytps.workload.coded_speech), streamed whole whatever the input, in chunks of
    // speech_chunk_ms of its average byte rate, at speech_rtf.
    struct CodedClip {
        std::string bytes;
        double seconds = 0.0;
    };
    std::unordered_map<std::string, CodedClip> speech_clips;

    std::vector<FaultSpec> faults;
    AnswerBook answers;          // graded answers (answers.hpp); empty: content is words only
    uint64_t seed = 0;
    // What keys a request's seeded draws (its timing and whether it answers right): false, its
    // arrival count; true, its prompt (and how many times that prompt came before), so the same
    // item gets the same draws whatever order concurrent requests arrive in, and two emulators
    // with one seed give each item the same draws (docs/emulator.md, "Seeds").
    bool draws_by_prompt = false;
    int64_t spin_ns = 60'000;    // busy-wait this close to a due time instead of sleeping
    bool realtime = false;       // SCHED_FIFO for the timing thread (needs root / CAP_SYS_NICE)
    std::string truth_log;       // JSON lines file, written by a side thread; empty: none
    bool keep_truth = true;      // keep records for truth(); false with a log keeps memory flat
};

}  // namespace pytps
