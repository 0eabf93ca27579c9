#include "core/stream_state.hpp"

namespace pytps {

// ---- ToolIndex ---------------------------------------------------------------------------

size_t ToolIndex::lower_bound(int64_t index, uint64_t& probes) const {
    size_t lo = 0, hi = sparse_.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        ++probes;
        if (sparse_[mid].first < index) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int32_t ToolIndex::find(int64_t index, uint64_t& probes) const {
    if (index >= 0 && index < kDenseIndexes) {
        ++probes;
        const size_t i = static_cast<size_t>(index);
        return i < dense_.size() ? dense_[i] : -1;
    }
    const size_t at = lower_bound(index, probes);
    return at < sparse_.size() && sparse_[at].first == index ? sparse_[at].second : -1;
}

void ToolIndex::insert(int64_t index, int32_t position) {
    if (index >= 0 && index < kDenseIndexes) {
        const size_t i = static_cast<size_t>(index);
        if (i >= dense_.size()) dense_.resize(i + 1, -1);
        dense_[i] = position;
        return;
    }
    uint64_t unused = 0;
    const size_t at = lower_bound(index, unused);
    sparse_.insert(sparse_.begin() + static_cast<std::ptrdiff_t>(at), {index, position});
}

void ToolIndex::erase(int64_t index) {
    if (index >= 0 && index < kDenseIndexes) {
        const size_t i = static_cast<size_t>(index);
        if (i < dense_.size()) dense_[i] = -1;
        return;
    }
    uint64_t unused = 0;
    const size_t at = lower_bound(index, unused);
    if (at < sparse_.size() && sparse_[at].first == index) sparse_.erase(sparse_.begin() + static_cast<std::ptrdiff_t>(at));
}

// ---- StreamState -------------------------------------------------------------------------

ToolCall* StreamState::tool(int64_t index) {
    const int32_t found = tool_index_.find(index, counters.tool_probes);
    if (found >= 0) {
        const size_t position = static_cast<size_t>(found);
        ToolCall& call = tool_calls[position];
        // A call from before this event is saved the first time the event touches it; one it
        // opened is simply dropped by a rollback.
        if (position < undo_.tools && call.journaled != undo_.serial) {
            call.journaled = undo_.serial;
            if (undo_.n_touched == undo_.touched.size()) undo_.touched.emplace_back();
            Undo::Tool& saved = undo_.touched[undo_.n_touched++];
            saved.position = position;
            saved.name = call.name.size();
            saved.arguments = call.arguments.size();
            saved.id.assign(call.id);
        }
        return &call;
    }
    if (tool_calls.size() >= kMaxToolCalls) return nullptr;
    tool_index_.insert(index, static_cast<int32_t>(tool_calls.size()));
    tool_calls.push_back(ToolCall{index, {}, {}, {}, undo_.serial});
    return &tool_calls.back();
}

std::string& StreamState::replace_finish_reason() {
    if (!undo_.finish_saved) {
        undo_.finish_reason.assign(finish_reason);
        undo_.finish_saved = true;
    }
    finish_reason.clear();
    has_finish_reason = true;
    return finish_reason;
}

std::string& StreamState::replace_server_timings(const char* source) {
    if (!undo_.timings_saved) {
        undo_.server_timings.assign(server_timings);
        undo_.server_timings_source = server_timings_source;
        undo_.timings_saved = true;
    }
    server_timings.clear();
    server_timings_source = source;
    return server_timings;
}

void StreamState::begin_event() {
    ++undo_.serial;
    undo_.text = text.size();
    undo_.reasoning = reasoning_text.size();
    undo_.tools = tool_calls.size();
    undo_.usage = usage;
    undo_.has_finish_reason = has_finish_reason;
    undo_.finish_saved = false;
    undo_.timings_saved = false;
    undo_.had_response_id = !response_id.empty();
    undo_.had_model = !model.empty();
    undo_.prefix_stores = prefix_cache.stores;
    undo_.shape_stores = shape_cache.stores;
    undo_.n_touched = 0;
}

void StreamState::rollback() {
    text.resize(undo_.text);
    reasoning_text.resize(undo_.reasoning);
    for (size_t i = undo_.tools; i < tool_calls.size(); ++i) tool_index_.erase(tool_calls[i].index);
    tool_calls.resize(undo_.tools);
    for (size_t i = 0; i < undo_.n_touched; ++i) {
        const Undo::Tool& saved = undo_.touched[i];
        ToolCall& call = tool_calls[saved.position];
        call.id.assign(saved.id);
        call.name.resize(saved.name);
        call.arguments.resize(saved.arguments);
    }
    undo_.n_touched = 0;
    usage = undo_.usage;
    has_finish_reason = undo_.has_finish_reason;
    if (undo_.finish_saved) finish_reason.assign(undo_.finish_reason);
    if (undo_.timings_saved) {
        server_timings.assign(undo_.server_timings);
        server_timings_source = undo_.server_timings_source;
    }
    if (!undo_.had_response_id) response_id.clear();
    if (!undo_.had_model) model.clear();
    // What the caches learnt from the event is forgotten (they relearn from the next one).
    if (prefix_cache.stores != undo_.prefix_stores) prefix_cache.valid = false;
    if (shape_cache.stores != undo_.shape_stores) shape_cache.valid = false;
}

}  // namespace pytps
