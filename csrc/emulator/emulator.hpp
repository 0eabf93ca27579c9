// The streaming emulator: an HTTP/1.1 server on 127.0.0.1 that answers like OpenAI,
// Anthropic and Ollama, on a schedule kept by its own thread, and records when every
// event was written. Public face for the bindings; the machinery is in server.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "emulator/config.hpp"
#include "emulator/truth.hpp"

namespace pytps {

struct EmulatorStats {
    uint64_t connections_accepted = 0;
    uint64_t connections_open = 0;
    uint64_t requests = 0;             // every HTTP request
    uint64_t generation_requests = 0;  // requests to the six generation paths
    uint64_t streams_active = 0;
    uint64_t decoding = 0;             // requests holding a batch slot (the load model's batch size)
    uint64_t queued = 0;               // requests waiting for a slot
    uint64_t events_sent = 0;          // token events written
    uint64_t writes = 0;               // send() calls that wrote bytes
    uint64_t bytes_sent = 0;
    uint64_t write_blocked = 0;        // times a socket buffer was full (EAGAIN)
    uint64_t faults = 0;
    uint64_t spins = 0;                // deadlines met by busy-waiting
    uint64_t sleeps = 0;               // kernel waits with a timeout (about one per deadline)
    uint64_t parse_bytes = 0;          // bytes the request parser examined (about one pass per request)
    int64_t first_accept_ns = 0;       // CLOCK_MONOTONIC when the first connection was accepted (0: none yet)
    uint64_t prefix_cache_resets = 0;  // POST /reset_prefix_cache calls
};

class Server;

class Emulator {
public:
    explicit Emulator(EmulatorConfig config);
    ~Emulator();
    Emulator(const Emulator&) = delete;
    Emulator& operator=(const Emulator&) = delete;

    // Binds, listens and starts the timing thread; returns the port. Throws std::runtime_error
    // (bind failure, already started).
    int start();
    // Stops the thread and closes every connection; open streams are recorded as incomplete.
    // Throws std::runtime_error if writing the truth log failed (after stopping).
    void stop();
    bool running() const;
    int port() const;
    const EmulatorConfig& config() const;

    std::vector<TruthRecord> truth(bool clear);
    size_t wait_truth(size_t n, int64_t timeout_ns);
    EmulatorStats stats() const;

private:
    std::unique_ptr<Server> server_;
};

}  // namespace pytps
