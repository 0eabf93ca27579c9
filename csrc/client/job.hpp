// One request in the ClientEngine: submitted by Python, carried by a Connection while it is
// on the wire, handed back to the engine when it ends (or to be sent again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/http_stream_recorder.hpp"

namespace pytps {

struct ClientJob {
    static constexpr int64_t kNoTime = HttpStreamRecorder::kNoTime;
    uint64_t id = 0;
    std::string request;
    int64_t t_sched_ns = kNoTime;
    int64_t t_send_ns = kNoTime;
    int64_t t_write_start_ns = kNoTime;  // the request's first write began (its send phase's start)
    int64_t connect_ns = -1;
    int64_t tls_ns = -1;
    // The engine's id of the Connection the request was (last) sent on; 0 before any.
    uint64_t connection_id = 0;
    size_t bytes_read = 0;  // of the response (plaintext over TLS)
    // Sends again after a kept-alive connection turned out stale. A resend only ever goes on a
    // new connection (a pooled one could be as stale), so it is never more than one.
    int retries = 0;
    // The connect, across the addresses tried: its start (kNoTime before the first attempt), the
    // attempts so far, the address of the latest, and why the earlier ones failed.
    int64_t connect_start_ns = kNoTime;
    size_t connect_attempts = 0;
    size_t connect_addr = 0;
    std::string connect_errors;
    std::unique_ptr<HttpStreamRecorder> http;
    std::vector<int64_t> recv_ns;  // with kernel_timestamps (see ClientResult)
    std::vector<int64_t> recv_kernel_ns;
};

}  // namespace pytps
