// Known-answer tests of pytps::PrefixCache (the emulator's LRU of prompt blocks), C++ only:
// compiled and run by tests/emulator/test_prefix_cache_cpp.py. clear() is what the emulator's
// POST /reset_prefix_cache calls. Prints one line per failed check and exits non-zero.
#include <cstdio>
#include <string>

#include "emulator/prefix_cache.hpp"

using pytps::PrefixCache;

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        ++checks;                                                                \
        if (!(cond)) {                                                           \
            ++failures;                                                          \
            std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
        }                                                                        \
    } while (0)

int main() {
    // Blocks of 16 tokens of 4 bytes: a 640-byte prompt is 160 tokens, 10 full blocks.
    const std::string prompt(640, 'a');
    const std::string other = std::string(320, 'a') + std::string(320, 'b');
    {
        PrefixCache cache(1000, 16);
        CHECK(cache.lookup_insert(prompt, 160) == 0);
        CHECK(cache.blocks() == 10);
        CHECK(cache.lookup_insert(prompt, 160) == 9 * 16);  // whole: the last block is computed again
        CHECK(cache.lookup_insert(other, 160) == 5 * 16);   // the shared first half
        cache.clear();
        CHECK(cache.blocks() == 0);
        CHECK(cache.lookup_insert(prompt, 160) == 0);  // cold after the reset
        CHECK(cache.lookup_insert(prompt, 160) == 9 * 16);  // and warm again after one pass
        cache.clear();
        cache.clear();  // twice is harmless
        CHECK(cache.blocks() == 0);
    }
    {
        PrefixCache none(0, 16);  // no cache: clear() on nothing, lookups give 0
        none.clear();
        CHECK(none.lookup_insert(prompt, 160) == 0);
        CHECK(none.blocks() == 0);
    }
    {
        PrefixCache small(48, 16);  // 3 blocks: the LRU evicts, clear() empties what is left
        CHECK(small.lookup_insert(prompt, 160) == 0);
        CHECK(small.blocks() == 3);
        small.clear();
        CHECK(small.blocks() == 0);
    }
    std::printf("%d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
