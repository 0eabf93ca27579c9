#include "emulator/batch.hpp"

#include <algorithm>
#include <cmath>

namespace pytps {

int64_t BatchModel::scaled_gap(int64_t gap_ns, double slowdown, int64_t n) {
    if (n <= 1 || slowdown <= 0.0 || gap_ns <= 0) return gap_ns;
    // One product and an integer sum (no a*b+c a compiler could fuse), so the same IEEE
    // operations in Python give the same ns: the tests recompute every gap exactly.
    const double extra = static_cast<double>(gap_ns) * slowdown * static_cast<double>(n - 1);
    if (!(extra < 1e18)) return gap_ns + static_cast<int64_t>(1e18);  // absurd settings: stay in int64
    return gap_ns + static_cast<int64_t>(std::llround(extra));
}

void BatchModel::advance(int64_t now, std::vector<uint64_t>& admitted) {
    while (!points_.empty() && points_.top().t <= now) {
        const Point p = points_.top();
        points_.pop();
        auto it = live_.find(p.seq);
        if (it == live_.end()) continue;  // left early: its points are void
        LoadState& s = *it->second;
        if (s.state != LoadState::State::decoding) continue;
        if (p.kind == kRelease) {
            release(s, p.t, admitted);
        } else {
            decide(s);
        }
    }
    if (now > horizon_) horizon_ = now;
}

void BatchModel::arrive(LoadState& s, int64_t t, std::vector<uint64_t>& admitted) {
    advance(t - 1, admitted);
    s.received_ns = t;
    live_[s.seq] = &s;
    const bool room = max_batch_ <= 0 || n_ < max_batch_;
    if (!closed_ && room && waiting_.empty()) {
        admit(s, after_horizon(t), admitted);
    } else {
        s.state = LoadState::State::queued;
        waiting_.push_back(&s);
        queued_.store(waiting_.size(), std::memory_order_relaxed);
    }
}

void BatchModel::leave(LoadState& s, int64_t t, std::vector<uint64_t>& admitted) {
    auto it = live_.find(s.seq);
    if (it == live_.end()) return;
    if (s.state == LoadState::State::queued) {
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &s));
        queued_.store(waiting_.size(), std::memory_order_relaxed);
    } else if (s.state == LoadState::State::decoding) {
        const int64_t at = after_horizon(t);
        advance(at - 1, admitted);  // may reach its own release point
        if (s.state == LoadState::State::decoding) release(s, at, admitted);
    }
    live_.erase(s.seq);
}

void BatchModel::admit(LoadState& s, int64_t t, std::vector<uint64_t>& admitted) {
    s.state = LoadState::State::decoding;
    s.admitted_ns = t;
    s.headers_due_ns = t + s.delay_ns;
    ++n_;
    decoding_.store(static_cast<uint64_t>(n_), std::memory_order_relaxed);
    const size_t ne = s.gap_ns.size();
    s.due_ns.assign(ne, 0);
    s.batch.assign(ne, 0);
    if (ne > 0) {
        s.due_ns[0] = t + s.gap_ns[0] + (s.stall_at == 0 ? s.stall_ns : 0);
        s.batch[0] = static_cast<int32_t>(n_);
        s.decided = s.batched = 1;
        if (slowdown_ <= 0.0) {
            // Gaps never depend on the batch: the whole schedule is known now (fewer wake-ups
            // with coalesce); the points still record each event's batch size.
            for (size_t i = 1; i < ne; ++i)
                s.due_ns[i] = s.due_ns[i - 1] + s.gap_ns[i] + (i == s.stall_at ? s.stall_ns : 0);
            s.decided = ne;
        }
    }
    next_point(s);
    admitted.push_back(s.conn_id);
}

void BatchModel::release(LoadState& s, int64_t t, std::vector<uint64_t>& admitted) {
    s.state = LoadState::State::released;
    s.released_ns = t;
    --n_;
    while (!closed_ && !waiting_.empty() && (max_batch_ <= 0 || n_ < max_batch_)) {
        LoadState* next = waiting_.front();
        waiting_.pop_front();
        admit(*next, t, admitted);
    }
    decoding_.store(static_cast<uint64_t>(n_), std::memory_order_relaxed);
    queued_.store(waiting_.size(), std::memory_order_relaxed);
}

// At the due time of event i-1: event i's batch size is the batch now, and (with a slowdown)
// its gap follows from it.
void BatchModel::decide(LoadState& s) {
    const size_t i = s.batched;
    s.batch[i] = static_cast<int32_t>(n_);
    if (slowdown_ > 0.0) {
        s.due_ns[i] = s.due_ns[i - 1] + scaled_gap(s.gap_ns[i], slowdown_, n_) + (i == s.stall_at ? s.stall_ns : 0);
        s.decided = i + 1;
    }
    s.batched = i + 1;
    next_point(s);
}

void BatchModel::next_point(LoadState& s) {
    if (s.batched < s.planned) {
        points_.push(Point{s.due_ns[s.batched - 1], kDecide, s.seq});
    } else {
        // Its last event is due: the slot is free from then (before it is even written, as a
        // server's scheduler frees a finished sequence while its last bytes are on the wire).
        points_.push(Point{s.planned > 0 ? s.due_ns[s.planned - 1] : s.headers_due_ns, kRelease, s.seq});
    }
}

}  // namespace pytps
