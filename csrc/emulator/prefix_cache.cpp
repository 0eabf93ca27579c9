#include "emulator/prefix_cache.hpp"

namespace pytps {

namespace {
// FNV-1a, 64 bits, continued from `h`: block k's key covers every byte of blocks 0..k.
uint64_t fnv1a(uint64_t h, std::string_view bytes) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}
}  // namespace

PrefixCache::PrefixCache(int64_t capacity_tokens, int64_t block_tokens)
    : capacity_blocks_(block_tokens > 0 ? capacity_tokens / block_tokens : 0), block_tokens_(block_tokens) {}

int64_t PrefixCache::lookup_insert(std::string_view prompt, int64_t prompt_tokens) {
    if (capacity_blocks_ <= 0) return 0;
    const size_t block_bytes = static_cast<size_t>(block_tokens_ * kBytesPerToken);
    const size_t full = prompt.size() / block_bytes;
    uint64_t h = 14695981039346656037ull;
    int64_t hits = 0;
    bool hitting = true;
    for (size_t k = 0; k < full; ++k) {
        h = fnv1a(h, prompt.substr(k * block_bytes, block_bytes));
        auto it = where_.find(h);
        if (it != where_.end()) {
            if (hitting) ++hits;
            lru_.splice(lru_.begin(), lru_, it->second);  // used: to the front
            continue;
        }
        hitting = false;
        lru_.push_front(h);
        where_.emplace(h, lru_.begin());
        while (static_cast<int64_t>(lru_.size()) > capacity_blocks_) {
            where_.erase(lru_.back());
            lru_.pop_back();
        }
    }
    int64_t cached = hits * block_tokens_;
    // A prompt found whole still computes its last token (as vLLM recomputes the last block).
    if (cached >= prompt_tokens) cached = hits > 0 ? (hits - 1) * block_tokens_ : 0;
    return cached;
}

}  // namespace pytps
