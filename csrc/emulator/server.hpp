// Internals of the emulator: connections, the per-request stream state and the loop.
// server.cpp has the loop, sockets and output; routes.cpp the HTTP dispatch;
// stream.cpp the timed responses.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/clock.hpp"
#include "emulator/batch.hpp"
#include "emulator/config.hpp"
#include "emulator/formats.hpp"
#include "emulator/metrics.hpp"
#include "emulator/prefix_cache.hpp"
#include "emulator/response_states.hpp"
#include "emulator/schedule.hpp"
#include "emulator/truth.hpp"
#include "emulator/emulator.hpp"
#include "io/event_loop.hpp"
#include "core/http1_request.hpp"
#include "emulator/http_write.hpp"

namespace pytps {

// One timed response in flight.
struct Stream {
    ResponsePlan plan;
    std::unique_ptr<Formatter> fmt;
    std::vector<TokenEvent> events;  // tokens and kinds (due times: load.due_ns)
    LoadState load;                  // admission, due times and batch sizes (batch.hpp)
    TruthRecord rec;
    size_t next = 0;             // first event not yet written (always a write-group start)
    size_t sent_events = 0;      // events whose write returned
    bool headers_sent = false;   // headers queued
    bool ended = false;          // every byte of the response is queued
    bool chunked = true;         // HTTP/1.1: chunked body; HTTP/1.0: raw body, then close
    FaultKind fault = FaultKind::none;
    size_t fault_at = 0;         // write-group start where disconnect / malformed / error_event act
    int64_t last_write_ns = 0;
    const AnswerKey* answer = nullptr;  // the prompt's entry in the answer book, if any
    bool answer_decided = false;
};

// Byte offsets in a connection's output after which something counts as sent.
struct Mark {
    enum Kind : uint8_t { headers, events, done } kind;
    uint64_t end;    // absolute output offset
    uint32_t first;  // events: first event index
    uint32_t count;
};

struct Conn {
    uint64_t id = 0;
    int fd = -1;
    std::string in;
    HttpRequestParser parser;    // resumes on `in` where the last read left it
    std::string out;
    size_t out_off = 0;
    uint64_t queued_total = 0;
    uint64_t written_total = 0;
    std::deque<Mark> marks;
    uint32_t interest = 0;
    bool want_write = false;
    bool peer_eof = false;
    bool close_after = false;    // close once the output is drained
    bool sent_continue = false;
    bool keep_alive = true;
    // The kernel's receive stamp (CLOCK_MONOTONIC) of the latest read, and of the read that
    // completed the request being served; INT64_MIN when the kernel gave none.
    int64_t rx_kernel_ns = INT64_MIN;
    int64_t request_kernel_ns = INT64_MIN;
    std::unique_ptr<Stream> stream;
    uint64_t timer_gen = 0;
};

class Server {
public:
    explicit Server(EmulatorConfig c);
    ~Server();

    int start();
    void stop();
    bool running() const { return running_.load(); }
    int port() const { return port_; }
    const EmulatorConfig& config() const { return cfg_; }
    TruthStore& truth() { return truth_; }
    EmulatorStats stats() const;

private:
    EmulatorConfig cfg_;
    FaultPicker faults_;
    BatchModel model_;
    PrefixCache prefix_cache_;
    ResponseStates responses_;  // Responses' previous_response_id state (response_states.hpp)
    TruthStore truth_;
    ServerMetrics metrics_;  // what /metrics serves (metrics.hpp)
    std::unique_ptr<EventLoop> loop_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stopping_{false};
    bool started_ = false;
    int64_t start_ns_ = 0;  // when start() ran: the TTFT ramp counts from here
    int listen_fd_ = -1;
    int stamp_keeper_fd_ = -1;  // keeps the kernel's RX stamping on (io/rx_stamps.hpp)
    RealtimeOffset realtime_;   // moves kernel stamps onto CLOCK_MONOTONIC; re-measured each second
    int port_ = 0;
    uint64_t next_conn_id_ = 1;
    uint64_t gen_seq_ = 0;
    // draws_by_prompt: how many times each prompt (by its FNV-1a hash) has come, so a repeated
    // prompt's k-th occurrence has draws of its own (one entry per distinct prompt).
    std::unordered_map<uint64_t, uint64_t> prompt_seen_;
    std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
    std::string scratch_;
    std::string frame_;

    // Counters, written by the loop thread only, read by stats() from any thread.
    std::atomic<int64_t> first_accept_ns_{0};  // stamped once, at the first accept (startup timing)
    std::atomic<uint64_t> n_prefix_resets_{0};
    std::atomic<uint64_t> n_accepted_{0}, n_requests_{0}, n_gen_{0}, n_streams_{0}, n_events_{0},
        n_writes_{0}, n_bytes_{0}, n_blocked_{0}, n_faults_{0}, n_open_{0}, n_parse_bytes_{0};

    void loop_main();
    void on_accept();
    void on_readable(Conn& c);
    void on_writable(Conn& c);
    void close_conn(Conn& c);
    void update_interest(Conn& c);
    Conn* find(uint64_t id);

    // Output: queue bytes (with an optional mark), then write what the socket takes.
    void queue(Conn& c, const std::string& bytes);
    void add_mark(Conn& c, Mark::Kind kind, uint32_t first, uint32_t count);
    bool flush(Conn& c);  // false: the connection failed and was closed
    void resolve_marks(Conn& c, int64_t t);
    void after_output(Conn& c);

    // HTTP (routes.cpp)
    void try_requests(Conn& c);
    void handle_request(Conn& c, HttpRequest& req, int64_t received_ns);
    void send_simple(Conn& c, int status, const std::string& body, const std::string& extra_headers,
                     bool keep_alive, const char* content_type = "application/json");
    // GET /metrics (metrics.cpp)
    void serve_metrics(Conn& c, HttpRequest& req);

    // Timed responses (stream.cpp)
    // A generation or body request's stream, its truth record opened (sequence, id, API, receipt).
    // The key of a request's seeded draws (config.hpp, draws_by_prompt).
    uint64_t draw_key(uint64_t seq, const std::string& prompt);
    std::unique_ptr<Stream> open_stream(const Conn& c, const HttpRequest& req, int64_t received_ns,
                                        const std::string& id_head, std::string api);
    // The start every request route shares: its stream opened (open_stream) and its body read by
    // parse(body, out, err); a body that cannot be read is answered 400 and recorded (reject),
    // and then the stream is null.
    template <class Parsed, class Parse>
    std::unique_ptr<Stream> open_request(Conn& c, const HttpRequest& req, int64_t received_ns,
                                         const std::string& id_head, std::string api, Parsed& out, Parse parse) {
        auto s = open_stream(c, req, received_ns, id_head, std::move(api));
        std::string err;
        if (parse(req.body, out, err)) return s;
        const std::string id_header = "x-request-id: " + s->rec.id + "\r\n";
        reject(c, req, std::move(s->rec), id_header, error_body(error_family(req.path), 400, err));
        return nullptr;
    }
    // The end every request route shares: the stream, its plan and truth made, answered 200 and
    // handed to the connection and the load model (admitted now, or queued).
    void launch(Conn& c, const HttpRequest& req, std::unique_ptr<Stream> s, int64_t received_ns);
    // A 400 for a request body that could not be read: the truth keeps it, the client gets `body`.
    void reject(Conn& c, const HttpRequest& req, TruthRecord&& rec, const std::string& id_header,
                const std::string& body);
    // The request's fault (faults_): true when it refused the request outright (429, 500, 503,
    // and an error_event on a whole body, which has no event to carry it), answered and recorded;
    // else s.fault is set (or none) and place_fault() puts it on the planned events.
    bool refuse_by_fault(Conn& c, const HttpRequest& req, Stream& s, const std::string& id_header, ErrorFamily fam,
                         bool whole_body, const FaultSpec*& fault);
    void place_fault(Stream& s, const FaultSpec* fault);
    void start_generation(Conn& c, const ApiPath& api, HttpRequest& req, int64_t received_ns);
    // Embeddings and rerank (body_route.cpp): one JSON body, timed by the same load model.
    void start_body_api(Conn& c, const BodyApiPath& api, HttpRequest& req, int64_t received_ns);
    // Text to speech and speech to text (audio_route.cpp): timed by the same load model.
    void start_audio(Conn& c, const AudioApiPath& api, HttpRequest& req, int64_t received_ns);
    void on_stream_timer(Conn& c);
    void write_group(Conn& c, int64_t now);
    void end_stream_bytes(Conn& c, std::string& payload);
    void queue_payload(Conn& c, const std::string& payload, bool end);
    void arm_timer(Conn& c);
    // The load model: settle it up to `now`, and arm the timers of the requests it admitted.
    void advance_model(int64_t now);
    void arm_admitted(const std::vector<uint64_t>& conn_ids, uint64_t except = 0);
    void finish_stream(Conn& c, bool completed);
    // Right or wrong, once, before the first content is formatted (answers.hpp).
    void decide_answer(Stream& s);
    void frame(const Stream& s, const std::string& payload, std::string& out);
};

}  // namespace pytps
