#include "core/histogram.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pytps {

namespace {

std::string range_text(int64_t lowest, int64_t highest) {
    return "[lowest=" + std::to_string(lowest) + ", highest=" + std::to_string(highest) + "]";
}

int floor_log2(uint64_t v) { return 63 - __builtin_clzll(v); }

// HdrHistogram's index arithmetic. A free function of plain values so hot loops can keep the
// geometry in registers (stores through int64_t* could alias the members otherwise).
inline size_t index_for(int64_t value, int64_t sub_bucket_mask, int unit_magnitude,
                        int half_count_magnitude, int64_t half_count) {
    // OR-ing the mask makes every value below one full sub-bucket range land in bucket 0.
    const int pow2ceiling = 64 - __builtin_clzll(static_cast<uint64_t>(value | sub_bucket_mask));
    const int bucket_index = pow2ceiling - unit_magnitude - (half_count_magnitude + 1);
    const int64_t sub_bucket_index = value >> (bucket_index + unit_magnitude);
    return (static_cast<size_t>(bucket_index + 1) << half_count_magnitude) +
           static_cast<size_t>(sub_bucket_index - half_count);
}

}  // namespace

Histogram::Histogram(int64_t lowest, int64_t highest, int significant_digits)
    : lowest_(lowest), highest_(highest), significant_digits_(significant_digits) {
    if (lowest < 1)
        throw std::invalid_argument("Histogram: lowest must be >= 1 (got " + std::to_string(lowest) +
                                    "); it is the smallest value recorded, e.g. 1 for nanoseconds");
    if (lowest > INT64_MAX / 2 || highest < 2 * lowest)
        throw std::invalid_argument("Histogram: highest must be >= 2 * lowest (got lowest=" +
                                    std::to_string(lowest) + ", highest=" + std::to_string(highest) +
                                    ")");
    if (significant_digits < 1 || significant_digits > 5)
        throw std::invalid_argument("Histogram: significant_digits must be in 1..5 (got " +
                                    std::to_string(significant_digits) + ")");

    // The smallest power of two holding 2 * 10^d sub-buckets: the upper half of every bucket then
    // has >= 10^d linear steps, which is the 10^-d relative resolution.
    int64_t single_unit_range = 2;
    for (int i = 0; i < significant_digits; ++i) single_unit_range *= 10;
    int sub_bucket_count_magnitude = 0;
    while ((int64_t{1} << sub_bucket_count_magnitude) < single_unit_range) ++sub_bucket_count_magnitude;
    sub_bucket_half_count_magnitude_ = std::max(sub_bucket_count_magnitude, 1) - 1;
    unit_magnitude_ = floor_log2(static_cast<uint64_t>(lowest));
    if (unit_magnitude_ + sub_bucket_half_count_magnitude_ > 61)
        throw std::invalid_argument(
            "Histogram: lowest=" + std::to_string(lowest) + " is too large for significant_digits=" +
            std::to_string(significant_digits) +
            ": lowest * 2 * 10^significant_digits must stay below 2^62; lower one of them");
    sub_bucket_count_ = int64_t{1} << (sub_bucket_half_count_magnitude_ + 1);
    sub_bucket_half_count_ = sub_bucket_count_ / 2;
    sub_bucket_mask_ = (sub_bucket_count_ - 1) << unit_magnitude_;

    // Power-of-two buckets needed until the first untrackable value passes `highest`.
    int64_t smallest_untrackable = sub_bucket_count_ << unit_magnitude_;
    size_t bucket_count = 1;
    while (smallest_untrackable <= highest) {
        if (smallest_untrackable > INT64_MAX / 2) {
            ++bucket_count;
            break;
        }
        smallest_untrackable <<= 1;
        ++bucket_count;
    }
    counts_len_ = (bucket_count + 1) * static_cast<size_t>(sub_bucket_half_count_);
    chunks_.resize(bucket_count + 1);
}

Histogram::Histogram(const Histogram& o)
    : lowest_(o.lowest_), highest_(o.highest_), significant_digits_(o.significant_digits_),
      unit_magnitude_(o.unit_magnitude_),
      sub_bucket_half_count_magnitude_(o.sub_bucket_half_count_magnitude_),
      sub_bucket_count_(o.sub_bucket_count_), sub_bucket_half_count_(o.sub_bucket_half_count_),
      sub_bucket_mask_(o.sub_bucket_mask_), counts_len_(o.counts_len_), chunks_(o.chunks_.size()),
      total_count_(o.total_count_), min_(o.min_), max_(o.max_), sum_(o.sum_), m2_(o.m2_) {
    const size_t half = static_cast<size_t>(sub_bucket_half_count_);
    for (size_t c = 0; c < chunks_.size(); ++c) {
        if (!o.chunks_[c]) continue;
        chunks_[c].reset(new int64_t[half]);
        std::memcpy(chunks_[c].get(), o.chunks_[c].get(), half * sizeof(int64_t));
    }
}

Histogram& Histogram::operator=(const Histogram& o) {
    if (this != &o) *this = Histogram(o);
    return *this;
}

std::string Histogram::config_string() const {
    return "Histogram(lowest=" + std::to_string(lowest_) + ", highest=" + std::to_string(highest_) +
           ", significant_digits=" + std::to_string(significant_digits_) + ")";
}

// ---- bucket geometry (HdrHistogram's index arithmetic) -----------------------------------

size_t Histogram::index_of(int64_t value) const noexcept {
    return index_for(value, sub_bucket_mask_, unit_magnitude_, sub_bucket_half_count_magnitude_,
                     sub_bucket_half_count_);
}

int64_t Histogram::value_from_index(size_t index) const noexcept {
    int bucket_index = static_cast<int>(index >> sub_bucket_half_count_magnitude_) - 1;
    int64_t sub_bucket_index =
        static_cast<int64_t>(index & static_cast<size_t>(sub_bucket_half_count_ - 1)) +
        sub_bucket_half_count_;
    if (bucket_index < 0) {
        sub_bucket_index -= sub_bucket_half_count_;
        bucket_index = 0;
    }
    return sub_bucket_index << (bucket_index + unit_magnitude_);
}

int64_t Histogram::lowest_equivalent_value(int64_t value) const noexcept {
    return value_from_index(index_of(value));
}

int64_t Histogram::highest_equivalent_value(int64_t value) const noexcept {
    const size_t index = index_of(value);
    const int bucket_index = std::max(static_cast<int>(index >> sub_bucket_half_count_magnitude_) - 1, 0);
    const int64_t width = int64_t{1} << (bucket_index + unit_magnitude_);
    return value_from_index(index) + (width - 1);
}

int64_t Histogram::count_at_index(size_t index) const noexcept {
    const size_t c = index >> sub_bucket_half_count_magnitude_;
    if (c >= chunks_.size() || !chunks_[c]) return 0;
    return chunks_[c][index & static_cast<size_t>(sub_bucket_half_count_ - 1)];
}

size_t Histogram::allocated_bytes() const noexcept {
    size_t n = 0;
    for (const auto& c : chunks_) n += c ? 1 : 0;
    return n * static_cast<size_t>(sub_bucket_half_count_) * sizeof(int64_t) +
           chunks_.size() * sizeof(chunks_[0]);
}

int64_t* Histogram::chunk_for(size_t index) {
    auto& chunk = chunks_[index >> sub_bucket_half_count_magnitude_];
    if (!chunk) chunk.reset(new int64_t[static_cast<size_t>(sub_bucket_half_count_)]());
    return chunk.get();
}

void Histogram::add_at_index(size_t index, int64_t count) {
    chunk_for(index)[index & static_cast<size_t>(sub_bucket_half_count_ - 1)] += count;
}

// ---- recording ---------------------------------------------------------------------------

void Histogram::check_value(int64_t value) const {
    if (value < lowest_ || value > highest_)
        throw std::invalid_argument("Histogram: value " + std::to_string(value) +
                                    " is outside the histogram's range " +
                                    range_text(lowest_, highest_) +
                                    "; build the Histogram with a wider range");
}

// Chan et al.'s pairwise update: folds a group of `count` values with exact sum `sum`, mean
// `mean_b` and squared-deviation sum `m2_b` into the running statistics.
void Histogram::add_stats(int64_t count, int128_t sum, long double m2_b, int64_t lo, int64_t hi) {
    if (count == 0) return;
    if (total_count_ == 0) {
        m2_ = m2_b;
    } else {
        const long double mean_a = detail::to_ld(sum_) / total_count_;
        const long double mean_b = detail::to_ld(sum) / count;
        const long double delta = mean_b - mean_a;
        const long double n = static_cast<long double>(total_count_) + count;
        m2_ += m2_b + delta * delta * (static_cast<long double>(total_count_) * count / n);
    }
    total_count_ += count;
    sum_ += sum;
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
}

static void check_total(int64_t have, int64_t add) {
    if (add > INT64_MAX - have)
        throw std::overflow_error("Histogram: total count would exceed 2^63-1 (have " +
                                  std::to_string(have) + ", adding " + std::to_string(add) + ")");
}

void Histogram::record(int64_t value, int64_t count) {
    check_value(value);
    if (count < 0)
        throw std::invalid_argument("Histogram.record: count must be >= 0 (got " +
                                    std::to_string(count) + ")");
    if (count == 0) return;
    check_total(total_count_, count);
    add_at_index(index_of(value), count);
    if (total_count_ == 0) {
        sum_ = static_cast<int128_t>(value) * count;
        m2_ = 0;
        total_count_ = count;
        min_ = max_ = value;
        return;
    }
    // Welford with weight `count`: the group's own spread is zero, so only the mean shift counts.
    const long double n_a = static_cast<long double>(total_count_);
    const long double delta = static_cast<long double>(value) - detail::to_ld(sum_) / n_a;
    m2_ += delta * delta * (n_a * count / (n_a + count));
    total_count_ += count;
    sum_ += static_cast<int128_t>(value) * count;
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
}

void Histogram::record_corrected(int64_t value, int64_t expected_interval) {
    check_value(value);
    if (expected_interval < 0)
        throw std::invalid_argument("Histogram.record_corrected: expected_interval must be >= 0 (got " +
                                    std::to_string(expected_interval) + "); 0 disables the correction");
    if (expected_interval > 0 && expected_interval < lowest_)
        throw std::invalid_argument(
            "Histogram.record_corrected: expected_interval " + std::to_string(expected_interval) +
            " is below lowest=" + std::to_string(lowest_) +
            ", so the synthesised values could fall outside the range; use 0 or >= lowest");
    const int64_t k_max = expected_interval > 0 ? value / expected_interval - 1 : 0;
    check_total(total_count_, 1);
    if (k_max > 0) check_total(total_count_ + 1, k_max);
    record(value, 1);
    if (k_max <= 0) return;

    // The synthesised values value - k*I (k = 1..K) form an arithmetic progression: walk it one
    // bucket at a time, adding how many of its members fall into each bucket.
    const int64_t I = expected_interval;
    for (int64_t k = 1; k <= k_max;) {
        const int64_t v = value - k * I;
        const size_t index = index_of(v);
        const int64_t k_end = std::min(k_max, (value - value_from_index(index)) / I);
        add_at_index(index, k_end - k + 1);
        k = k_end + 1;
    }
    const long double K = static_cast<long double>(k_max);
    const int128_t sum = static_cast<int128_t>(k_max) * value -
                         static_cast<int128_t>(I) * k_max * (k_max + 1) / 2;
    // Squared deviations of K evenly spaced values: I^2 * K * (K^2 - 1) / 12.
    const long double m2 = static_cast<long double>(I) * I * K * (K * K - 1) / 12;
    add_stats(k_max, sum, m2, value - k_max * I, value - I);
}

void Histogram::record_many(const int64_t* values, size_t n) {
    if (n == 0) return;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int128_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
        const int64_t v = values[i];
        if (v < lowest_ || v > highest_)
            throw std::invalid_argument("Histogram.record_many: value " + std::to_string(v) +
                                        " at index " + std::to_string(i) +
                                        " is outside the histogram's range " +
                                        range_text(lowest_, highest_) + "; nothing was recorded");
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
    }
    check_total(total_count_, static_cast<int64_t>(n));
    // Two-pass batch variance, then one Chan merge: no division per value.
    const long double mean = detail::to_ld(sum) / static_cast<long double>(n);
    long double m2 = 0;
    const int64_t mask = sub_bucket_mask_, half = sub_bucket_half_count_;
    const int unit = unit_magnitude_, half_mag = sub_bucket_half_count_magnitude_;
    for (size_t i = 0; i < n; ++i) {
        const int64_t v = values[i];
        const long double d = static_cast<long double>(v) - mean;
        m2 += d * d;
        const size_t index = index_for(v, mask, unit, half_mag, half);
        int64_t* chunk = chunks_[index >> half_mag].get();
        if (__builtin_expect(!chunk, 0)) chunk = chunk_for(index);
        ++chunk[index & static_cast<size_t>(half - 1)];
    }
    add_stats(static_cast<int64_t>(n), sum, m2, lo, hi);
}

void Histogram::merge(const Histogram& other) {
    if (lowest_ != other.lowest_ || highest_ != other.highest_ ||
        significant_digits_ != other.significant_digits_)
        throw std::invalid_argument("Histogram.merge: cannot merge " + other.config_string() +
                                    " into " + config_string() +
                                    ": the parameters differ; build both with the same lowest, "
                                    "highest and significant_digits");
    if (other.total_count_ == 0) return;
    check_total(total_count_, other.total_count_);
    // Copies first: `other` may be *this.
    const int64_t count = other.total_count_, lo = other.min_, hi = other.max_;
    const int128_t sum = other.sum_;
    const long double m2 = other.m2_;
    const size_t half = static_cast<size_t>(sub_bucket_half_count_);
    for (size_t c = 0; c < chunks_.size(); ++c) {
        const int64_t* src = other.chunks_[c].get();
        if (!src) continue;
        int64_t* dst = chunk_for(c * half);
        for (size_t j = 0; j < half; ++j) dst[j] += src[j];
    }
    add_stats(count, sum, m2, lo, hi);
}

void Histogram::reset() noexcept {
    for (auto& c : chunks_) c.reset();
    total_count_ = 0;
    min_ = INT64_MAX;
    max_ = 0;
    sum_ = 0;
    m2_ = 0;
}

}  // namespace pytps
