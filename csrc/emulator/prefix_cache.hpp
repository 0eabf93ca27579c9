// The emulator's prefix cache: an LRU of prompt blocks, as serving engines keep KV blocks
// (vLLM's automatic prefix caching, SGLang's radix cache). A prompt is cut into blocks of
// `block_tokens` emulator tokens (4 bytes each, the emulator's token estimate); block k is
// identified by a hash of blocks 0..k, so a block only matches behind the same prefix. A
// prompt's cached tokens are those of its leading blocks found in the cache; its full blocks
// then go in (most recently used), and the least recently used leave past the capacity.
#pragma once
#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>

namespace pytps {

class PrefixCache {
public:
    static constexpr int64_t kBytesPerToken = 4;  // as estimate_prompt_tokens

    // capacity_tokens 0: no cache (lookups give 0).
    PrefixCache(int64_t capacity_tokens, int64_t block_tokens);

    // Looks `prompt` up and inserts its full blocks; returns the cached tokens (a multiple of
    // the block size, never more than prompt_tokens).
    int64_t lookup_insert(std::string_view prompt, int64_t prompt_tokens);

    int64_t blocks() const { return static_cast<int64_t>(lru_.size()); }

    // Forgets every block (POST /reset_prefix_cache, as vLLM's): the next prompts start cold.
    void clear() {
        lru_.clear();
        where_.clear();
    }

private:
    int64_t capacity_blocks_;
    int64_t block_tokens_;
    std::list<uint64_t> lru_;  // front: most recently used
    std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

}  // namespace pytps
