// The load model: at most `max_batch` requests decode at once, later ones wait in a FIFO
// queue, and every decoding stream's gaps grow with the number decoding (`batch_slowdown`).
// It runs in model time, on the due times it computes, never on when the timing thread got
// round to them: so the schedule stays absolute and exact whatever the lateness of writes,
// a pure function of when requests arrived and when clients left (docs/emulator.md, "Load").
#pragma once
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>
#include <vector>

namespace pytps {

// One request's part in the model, kept in its Stream.
struct LoadState {
    uint64_t seq = 0;
    uint64_t conn_id = 0;
    int64_t received_ns = 0;
    // Set when the request arrives.
    std::vector<int64_t> gap_ns;  // [0]: admission to event 0 (slow-headers delay + TTFT + prefill);
                                  // [i]: the gap before event i at a batch of one
    int64_t delay_ns = 0;         // admission to the headers (slow_headers)
    size_t stall_at = SIZE_MAX;   // a stall fault: stall_ns added, never scaled, before this event
    int64_t stall_ns = 0;
    size_t planned = 0;           // events the response reaches before it ends (a fault may end it early)
    // Decided by the model.
    enum class State : uint8_t { arriving, queued, decoding, released } state = State::arriving;
    int64_t admitted_ns = 0;      // 0: never admitted
    int64_t released_ns = 0;      // 0: never admitted
    int64_t headers_due_ns = 0;
    std::vector<int64_t> due_ns;  // final for [0, decided)
    std::vector<int32_t> batch;   // recorded for [0, batched)
    size_t decided = 0;
    size_t batched = 0;

    bool admitted() const { return state == State::decoding || state == State::released; }
};

class BatchModel {
public:
    // max_batch 0: no limit (nobody queues). slowdown 0: gaps never depend on the batch.
    BatchModel(int64_t max_batch, double slowdown) : max_batch_(max_batch), slowdown_(slowdown) {}

    // Each call appends the conn_id of every request it admitted to `admitted`: their
    // timers need arming (a request admitted from the queue has its headers due at once).

    // Settles model time up to `now`: slots freed, queued requests admitted, gaps decided,
    // batch sizes recorded, for every point at or before `now`, in time order.
    void advance(int64_t now, std::vector<uint64_t>& admitted);
    // A request received at `t`: admitted at once if a slot is free and nobody waits, else queued.
    void arrive(LoadState& s, int64_t t, std::vector<uint64_t>& admitted);
    // The request is over at `t` (finished, client gone, server stopping): frees its slot if it
    // still holds one, or its place in the queue, and forgets it. The model settles its points
    // before t first; so that every event sent has its batch size, t must be later than the
    // due time of the last event sent.
    void leave(LoadState& s, int64_t t, std::vector<uint64_t>& admitted);
    // No more admissions (the server is stopping).
    void close() { closed_ = true; }

    // Read from any thread (stats()).
    uint64_t decoding() const { return decoding_.load(std::memory_order_relaxed); }
    uint64_t queued() const { return queued_.load(std::memory_order_relaxed); }

    // The gap before an event at batch size n: gap + round(gap x slowdown x (n - 1)), in ns.
    static int64_t scaled_gap(int64_t gap_ns, double slowdown, int64_t n);

private:
    // Ties: a slot freed at t counts as free for whatever else happens at t (so a request
    // admitted in it at t counts in the batch of a gap decided at t, the leaving one does not).
    enum Kind : uint8_t { kRelease = 0, kDecide = 1 };
    struct Point {
        int64_t t;
        Kind kind;
        uint64_t seq;
        bool operator>(const Point& o) const { return t != o.t ? t > o.t : kind > o.kind; }
    };

    int64_t max_batch_;
    double slowdown_;
    bool closed_ = false;
    int64_t n_ = 0;                 // decoding now (model time horizon_)
    int64_t horizon_ = INT64_MIN;   // every point at or before it is settled
    std::priority_queue<Point, std::vector<Point>, std::greater<Point>> points_;
    std::unordered_map<uint64_t, LoadState*> live_;  // queued or decoding, by seq
    std::deque<LoadState*> waiting_;
    std::atomic<uint64_t> decoding_{0}, queued_{0};

    // An outside event (arrival, leave) at t happens after every point settled so far.
    int64_t after_horizon(int64_t t) const { return horizon_ == INT64_MIN || t > horizon_ ? t : horizon_ + 1; }
    void admit(LoadState& s, int64_t t, std::vector<uint64_t>& admitted);
    void release(LoadState& s, int64_t t, std::vector<uint64_t>& admitted);
    void decide(LoadState& s);
    void next_point(LoadState& s);
};

}  // namespace pytps
