#include "emulator/answers.hpp"

#include <algorithm>
#include <random>

#include "emulator/schedule.hpp"

namespace pytps {

const AnswerKey* AnswerBook::find(const std::string& last_text) const {
    if (by_prompt.empty()) return nullptr;
    auto it = by_prompt.find(last_text);
    if (it != by_prompt.end()) return &it->second;
    // Else its last non-blank line, trimmed: a prompt padded before its question.
    const char* ws = " \t\r\n";
    size_t end = last_text.find_last_not_of(ws);
    if (end == std::string::npos) return nullptr;
    size_t nl = last_text.rfind('\n', end);
    size_t begin = nl == std::string::npos ? 0 : nl + 1;
    begin = last_text.find_first_not_of(ws, begin);
    it = by_prompt.find(last_text.substr(begin, end + 1 - begin));
    return it == by_prompt.end() ? nullptr : &it->second;
}

double AnswerBook::probability(int64_t batch) const {
    const double p = accuracy - accuracy_drop * static_cast<double>(std::max<int64_t>(batch, 1) - 1);
    return std::clamp(p, 0.0, 1.0);
}

bool AnswerBook::draw_right(uint64_t seed, uint64_t seq, int64_t batch) const {
    // A stream apart from request_rng(seed, seq)'s, which the timing draws use.
    std::mt19937_64 rng = request_rng(seed ^ 0xA5A5'0123'4567'89ABULL, seq);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    return u < probability(batch);
}

}  // namespace pytps
