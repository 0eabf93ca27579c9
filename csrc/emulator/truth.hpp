// Ground truth of the emulator: per request, when it was fully received and when each
// event's write returned, kept for Emulator.truth() and optionally appended to a JSON-lines
// file by a side thread (the timing thread never touches the disk).
#pragma once
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pytps {

// A tool call the agent model sent (agent.hpp).
struct TruthToolCall {
    std::string id;
    std::string name;
    std::string arguments;
    bool valid = true;  // false: planted invalid against the tool's schema
};

struct TruthRecord {
    uint64_t seq = 0;            // 1-based count of generation requests
    std::string id;              // the response id the stream carries (also the x-request-id header)
    std::string api;             // chat, completions, responses, messages, ollama_chat, ollama_generate
    std::string path;
    std::string fault = "none";
    int status = 0;
    bool stream = false;
    bool completed = false;      // every planned event was written and the response ended normally
    int64_t received_ns = 0;     // the request was fully received
    // The kernel's receive stamp of the read that completed the request (SO_TIMESTAMPING, on
    // CLOCK_MONOTONIC): when the bytes were here, before the timing thread woke to read them.
    // INT64_MIN when the kernel gave none.
    int64_t received_kernel_ns = INT64_MIN;
    int64_t headers_sent_ns = 0; // the write carrying the response headers returned (0: never)
    int64_t done_ns = 0;         // the last write returned or the connection was closed
    // The load model (emulator/batch.hpp): when the request got a batch slot and freed it
    // (0: never held one), and how long it waited for it.
    int64_t admitted_ns = 0;
    int64_t released_ns = 0;
    int64_t queued_ns = 0;
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;   // of prompt_tokens, served by the prefix cache
    int64_t output_tokens = 0;   // tokens actually written
    int64_t reasoning_tokens = 0;
    int64_t planned_events = 0;
    // Embeddings and rerank: the inputs (texts or documents), the vector length (0 for rerank and
    // generation) and the results the answer carries (vectors, or ranked documents).
    int64_t inputs = 0;
    int64_t dimensions = 0;
    int64_t results = 0;
    // Image parts of a chat request and the prompt tokens they count for (in prompt_tokens).
    int64_t images = 0;
    int64_t image_tokens = 0;
    int64_t keepalives = 0;
    bool client_closed = false;  // the client went away before the end
    // Graded answers (answers.hpp): "right" or "wrong" for a prompt the answer book knows, ""
    // otherwise; answer_sent: the content's last token, which carries it, was written.
    std::string answer;
    bool answer_sent = false;
    // The audio routes: speech's bytes per second of audio (tokens[i] are then the audio bytes of
    // write i: tokens[i] / audio_bytes_per_s seconds), the input audio's seconds of a
    // transcription, the transcript sent and how many of its words were planted errors.
    int64_t audio_bytes_per_s = 0;
    // Speech: the audio seconds of each write (PCM: its bytes / audio_bytes_per_s; a compressed
    // clip: its share of the clip's bytes x the clip's seconds, exact in total only).
    std::vector<double> write_audio_s;
    double input_audio_s = 0.0;
    std::string transcript;
    int64_t transcript_words = 0;
    int64_t planted_errors = 0;
    // The agent model (agent.hpp): the request's turn (tool-call turns before it; -1: not an
    // agent request), the tool results it carried for the last of them (call ids, content bytes)
    // and the calls the response made (none on the final answer).
    int64_t turn = -1;
    std::vector<std::string> tool_results;
    std::vector<int64_t> tool_result_chars;
    std::vector<TruthToolCall> tool_calls;
    // One entry per token event written, in order (events never written are not listed).
    std::vector<int64_t> scheduled_ns;
    std::vector<int64_t> sent_ns;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> kinds;  // pytps.KIND_*: 0 content, 1 reasoning, 2 tool-call arguments
    std::vector<int32_t> batch;  // requests decoding when the event's gap was decided
};

std::string truth_json_line(const TruthRecord& r);

class TruthStore {
public:
    TruthStore() = default;
    ~TruthStore() { close_log(); }

    // Opens (truncating) the JSON-lines file and starts its writer thread. Throws on failure.
    void open_log(const std::string& path, bool keep);
    void close_log();
    // After close_log(): why writing the log failed (the first error: ENOSPC, EIO...), then
    // forgotten; empty when every line was written.
    std::string take_log_error();

    void publish(TruthRecord&& r);
    std::vector<TruthRecord> snapshot(bool clear);
    size_t size();
    // Waits until at least `n` records are kept or `timeout_ns` passes; returns the count.
    // (A client has the last bytes as soon as the write happens, a moment before the record
    // is published, so tests and tools wait for it.)
    size_t wait_for(size_t n, int64_t timeout_ns);

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable added_;
    std::vector<TruthRecord> kept_;
    std::vector<TruthRecord> to_log_;
    bool keep_ = true;
    bool logging_ = false;
    bool closing_ = false;
    std::FILE* file_ = nullptr;
    std::string log_path_;
    int log_errno_ = 0;  // written by the writer thread, read after it is joined
    std::thread writer_;

    void writer_main();
};

}  // namespace pytps
