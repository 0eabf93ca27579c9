// The synthetic workload's prompt words drawn natively (issue 42): seeding Python's
// random.Random with a string and drawing a prompt's words from it was ~10% of a 1-token
// request's client CPU. These are the same draws, index for index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pytps {

// The indices (into a list of n words) that pytps.workload.synthetic._shuffled_words draws
// from random.Random(seed): an incremental Fisher-Yates shuffle over a stream of shuffled
// copies of the list, each draw CPython's randrange(m) (getrandbits of m's bit length until one
// is below m). key: the seed integer's 32-bit words, least significant first, as CPython's
// random_seed hands them to init_by_array (at least one word). n: 1 to 2^32 - 1.
std::vector<uint32_t> shuffled_word_indices(const std::vector<uint32_t>& key, uint32_t n, size_t k);

}  // namespace pytps
