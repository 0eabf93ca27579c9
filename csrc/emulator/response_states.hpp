// The Responses API's server-held state (`previous_response_id`): per response id, the
// conversation it ended with (its input after the instructions, then its output), so a request
// naming it sends only the new items. Bounded in bytes: the oldest responses are forgotten first
// (a request naming one gets OpenAI's 400 "not found"). Used by the event-loop thread only.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>

namespace pytps {

class ResponseStates {
public:
    static constexpr size_t kMaxBytes = size_t{256} << 20;

    // The state of `id`, or nullptr when it was never stored or was forgotten.
    const std::string* find(const std::string& id) const {
        auto it = states_.find(id);
        return it == states_.end() ? nullptr : &it->second;
    }

    void store(const std::string& id, std::string state) {
        bytes_ += state.size();
        states_[id] = std::move(state);
        order_.push_back(id);
        while (bytes_ > kMaxBytes && order_.size() > 1) {
            auto it = states_.find(order_.front());
            if (it != states_.end()) {
                bytes_ -= it->second.size();
                states_.erase(it);
            }
            order_.pop_front();
        }
    }

    size_t size() const { return states_.size(); }

private:
    std::unordered_map<std::string, std::string> states_;
    std::deque<std::string> order_;
    size_t bytes_ = 0;
};

}  // namespace pytps
