#include "core/word_draw.hpp"

#include <array>

namespace pytps {

namespace {

// MT19937 as CPython's random module runs it (Modules/_randommodule.c, after Matsumoto and
// Nishimura's reference): init_by_array's seeding and genrand_uint32's outputs. Written out
// rather than std::mt19937 (which gives the same outputs from the same state) for two savings
// that are most of a short prompt's cost: init_genrand(19650218), the same for every key, is
// made once; and a prompt needs a few outputs, not the 624 a whole twist makes (output i < 227
// of the first twist reads only the seeded state, so it is made alone).
constexpr size_t kN = 624;
constexpr size_t kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpper = 0x80000000U;
constexpr uint32_t kLower = 0x7fffffffU;

using State = std::array<uint32_t, kN>;

State init_genrand(uint32_t s) {
    State mt{};
    mt[0] = s;
    for (size_t i = 1; i < kN; ++i) mt[i] = 1812433253U * (mt[i - 1] ^ (mt[i - 1] >> 30)) + static_cast<uint32_t>(i);
    return mt;
}

const State& base_state() {
    static const State base = init_genrand(19650218U);
    return base;
}

uint32_t twisted(uint32_t a, uint32_t b, uint32_t c) {
    const uint32_t y = (a & kUpper) | (b & kLower);
    return c ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
}

uint32_t temper(uint32_t y) {
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

class Generator {
public:
    explicit Generator(const std::vector<uint32_t>& key) : mt_(base_state()) {
        size_t i = 1, j = 0;
        const size_t len = key.size();
        for (size_t k = kN > len ? kN : len; k > 0; --k) {
            mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] + static_cast<uint32_t>(j);
            if (++i >= kN) {
                mt_[0] = mt_[kN - 1];
                i = 1;
            }
            if (++j >= len) j = 0;
        }
        for (size_t k = kN - 1; k > 0; --k) {
            mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
            if (++i >= kN) {
                mt_[0] = mt_[kN - 1];
                i = 1;
            }
        }
        mt_[0] = 0x80000000U;  // the most significant bit set: never an all-zero state
    }

    uint32_t next() {
        if (first_twist_ && index_ < kN - kM) {
            // The first twist's word index_ from the seeded state alone (words index_, +1, +kM:
            // none yet replaced, since they are made in order and only up to index_ - 1).
            const uint32_t y = twisted(mt_[index_], mt_[index_ + 1], mt_[index_ + kM]);
            early_[index_] = y;
            return temper(early_[index_++]);
        }
        if (first_twist_) {
            // Past the first twist's early words: finish it whole (the early ones written in).
            for (size_t kk = 0; kk < index_; ++kk) mt_[kk] = early_[kk];
            twist_from(index_);
            first_twist_ = false;
        } else if (index_ >= kN) {
            twist_from(0);
            index_ = 0;
        }
        return temper(mt_[index_++]);
    }

private:
    void twist_from(size_t from) {
        size_t kk = from;
        for (; kk < kN - kM; ++kk) mt_[kk] = twisted(mt_[kk], mt_[kk + 1], mt_[kk + kM]);
        for (; kk < kN - 1; ++kk) mt_[kk] = twisted(mt_[kk], mt_[kk + 1], mt_[kk + kM - kN]);
        mt_[kN - 1] = twisted(mt_[kN - 1], mt_[0], mt_[kM - 1]);
    }

    State mt_;
    std::array<uint32_t, kN - kM> early_{};
    size_t index_ = 0;
    bool first_twist_ = true;
};

int bit_length(uint32_t m) {
    int bits = 0;
    while (m != 0) {
        ++bits;
        m >>= 1;
    }
    return bits;
}

}  // namespace

std::vector<uint32_t> shuffled_word_indices(const std::vector<uint32_t>& key, uint32_t n, size_t k) {
    std::vector<uint32_t> out;
    if (key.empty() || n == 0) return out;
    Generator gen(key);
    out.reserve(k);
    // The pool in place: slot -> word index, a Fisher-Yates shuffle made as far as it is drawn.
    // Laid out whole (n words, a few hundred) and reset for each new copy of the list: a map of
    // the slots a swap changed cost a node per word, ~30 ns each (a quarter of a 256-token
    // prompt's client CPU, issue 42). Slot i is never read again once drawn.
    std::vector<uint32_t> pool(n);
    uint32_t i = n;
    while (out.size() < k) {
        if (i == n) {
            for (uint32_t s = 0; s < n; ++s) pool[s] = s;
            i = 0;
        }
        const uint32_t m = n - i;
        const int shift = 32 - bit_length(m);
        uint32_t r = gen.next() >> shift;  // getrandbits(bits): the top bits of one output
        while (r >= m) r = gen.next() >> shift;
        const uint32_t j = i + r;
        const uint32_t word_j = pool[j];
        pool[j] = pool[i];
        out.push_back(word_j);
        ++i;
    }
    return out;
}

}  // namespace pytps
