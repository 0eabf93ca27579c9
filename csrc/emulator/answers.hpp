// Graded answers (docs/emulator.md, "Answers"): the emulator knows each prompt's reference and
// ends its content with a right answer with probability p (falling with the batch size when
// asked), a wrong one otherwise. pytps.Emulator prepares both texts per prompt, so that each
// grader can tell them apart; this side only looks them up and draws.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

namespace pytps {

struct AnswerKey {
    std::string right;  // the text after "Answer:" that the prompt's grader accepts
    std::string wrong;  // one it refuses
};

struct AnswerBook {
    // By the prompt's last text: the last string under messages / prompt / input of the request
    // body (the last message's content; a completion prompt itself), or that text's last line.
    std::unordered_map<std::string, AnswerKey> by_prompt;
    double accuracy = 1.0;        // chance of the right answer at a batch of one
    double accuracy_drop = 0.0;   // less per request decoding beside it: p = accuracy - drop x (batch - 1)

    bool empty() const { return by_prompt.empty(); }
    const AnswerKey* find(const std::string& last_text) const;
    // The chance of a right answer for a request admitted into a batch of `batch` (>= 1).
    double probability(int64_t batch) const;
    // Whether generation request `seq` answers right: a seeded draw of its own (independent of
    // the timing draws), so the same seed and seq give the same verdict whatever the timing.
    bool draw_right(uint64_t seed, uint64_t seq, int64_t batch) const;
};

}  // namespace pytps
