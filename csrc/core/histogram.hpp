// Latency histogram in the HdrHistogram layout: log-linear buckets over int64 values,
// with the exact count/min/max/mean/stddev of the recorded values kept beside the buckets.
//
// Layout: values are split into power-of-two "buckets"; each bucket has `sub_bucket_half_count`
// linear sub-buckets (2^ceil(log2(2*10^d)) / 2 of them, d = significant_digits), so every bucket
// above the first resolves its values to 1 part in sub_bucket_half_count >= 10^d. Counts live in
// one flat index space, as in HdrHistogram, but stored in lazily allocated chunks of
// sub_bucket_half_count counts: memory follows the octaves actually touched (8 KiB per octave at
// d=3), not the whole [lowest, highest] span (~264 KiB for the default 1 ns .. 1 h).
//
// Files: histogram.cpp (geometry, recording, merge), histogram_query.cpp (percentiles, stats),
// histogram_codec.cpp (to_bytes/from_bytes). Not thread-safe: the bindings serialise access.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pytps {

__extension__ using int128_t = __int128;  // GCC/Clang builtin; exact sums need 126 bits

namespace detail {
// libgcc's int128 -> long double is a slow call; sums usually fit int64.
inline long double to_ld(int128_t v) {
    const int64_t low = static_cast<int64_t>(v);
    if (low == v) return static_cast<long double>(low);
    return static_cast<long double>(v);
}
}  // namespace detail

class Histogram {
public:
    static constexpr int64_t kDefaultLowest = 1;
    static constexpr int64_t kDefaultHighest = 3'600'000'000'000;  // one hour in ns
    static constexpr int kDefaultSignificantDigits = 3;

    // Throws std::invalid_argument when lowest < 1, highest < 2*lowest, significant_digits not in
    // 1..5, or lowest too large for that precision to fit int64 arithmetic.
    explicit Histogram(int64_t lowest = kDefaultLowest, int64_t highest = kDefaultHighest,
                       int significant_digits = kDefaultSignificantDigits);

    Histogram(const Histogram& other);
    Histogram& operator=(const Histogram& other);
    Histogram(Histogram&&) noexcept = default;
    Histogram& operator=(Histogram&&) noexcept = default;

    // Records `count` occurrences of `value`. Throws std::invalid_argument when value is outside
    // [lowest, highest] or count < 0, std::overflow_error when the total count would pass int64.
    void record(int64_t value, int64_t count = 1);

    // HdrHistogram's coordinated-omission correction: records `value`, and when
    // expected_interval > 0 also the values a stalled sampler failed to take:
    // value - k*expected_interval for k = 1, 2, ... while that is >= expected_interval.
    // expected_interval == 0 records `value` alone. Throws std::invalid_argument for a value
    // out of range, expected_interval < 0, or 0 < expected_interval < lowest (the synthesised
    // values could fall below the range). O(buckets touched), not O(values synthesised).
    void record_corrected(int64_t value, int64_t expected_interval);

    // Records every value of values[0..n). All or nothing: the whole input is checked first and
    // the histogram is left unchanged if any value is out of range (std::invalid_argument names
    // the first such value and its index).
    void record_many(const int64_t* values, size_t n);

    // Adds other's counts and statistics. Throws std::invalid_argument naming both configurations
    // when lowest/highest/significant_digits differ (re-bucketing would silently lose precision).
    void merge(const Histogram& other);

    void reset() noexcept;

    // HdrHistogram's value at percentile p in [0, 100] (std::invalid_argument outside, or NaN):
    // with n values recorded, the rank is k = max(1, ceil(p/100 * n)) (a rank within 16 ulps above
    // an integer is snapped down to it, so 99.9 of 1000 is the 999th value although 99.9 is not
    // exact in binary), and the answer is the k-th smallest recorded value reported as the
    // highest value of its bucket, clamped to the exact max. Rank 1 is the exact min and rank n
    // the exact max. 0 when empty.
    int64_t value_at_percentile(double p) const;
    std::vector<int64_t> percentiles(const std::vector<double>& ps) const;

    int64_t lowest() const noexcept { return lowest_; }
    int64_t highest() const noexcept { return highest_; }
    int significant_digits() const noexcept { return significant_digits_; }

    int64_t count() const noexcept { return total_count_; }
    int64_t min() const noexcept { return total_count_ ? min_ : 0; }
    int64_t max() const noexcept { return total_count_ ? max_ : 0; }
    double mean() const noexcept;    // exact sum / count, rounded once; 0 when empty
    double stddev() const noexcept;  // population (divide by n) standard deviation; 0 when empty
    std::string config_string() const;  // "Histogram(lowest=.., highest=.., significant_digits=..)"

    // Bucket geometry (HdrHistogram's names).
    size_t counts_len() const noexcept { return counts_len_; }
    size_t index_of(int64_t value) const noexcept;
    int64_t value_from_index(size_t index) const noexcept;
    int64_t lowest_equivalent_value(int64_t value) const noexcept;
    int64_t highest_equivalent_value(int64_t value) const noexcept;
    int64_t count_at_index(size_t index) const noexcept;
    size_t allocated_bytes() const noexcept;  // memory held by the counts

    // Compact versioned binary form (histogram_codec.cpp; layout in docs/histogram.md).
    std::string to_bytes() const;
    // Throws std::invalid_argument saying what is wrong with `data`.
    static Histogram from_bytes(const uint8_t* data, size_t size);

    bool operator==(const Histogram& other) const;

private:
    void check_value(int64_t value) const;
    void add_at_index(size_t index, int64_t count);
    void add_stats(int64_t count, int128_t sum, long double m2, int64_t lo, int64_t hi);
    int64_t value_at_rank(int64_t rank) const;
    int64_t rank_of(double p) const;
    int64_t* chunk_for(size_t index);

    int64_t lowest_, highest_;
    int significant_digits_;
    int unit_magnitude_;
    int sub_bucket_half_count_magnitude_;
    int64_t sub_bucket_count_;
    int64_t sub_bucket_half_count_;
    int64_t sub_bucket_mask_;
    size_t counts_len_;
    std::vector<std::unique_ptr<int64_t[]>> chunks_;  // chunk c holds indices [c*half, (c+1)*half)

    int64_t total_count_ = 0;
    int64_t min_ = INT64_MAX;
    int64_t max_ = 0;
    int128_t sum_ = 0;     // exact: |value| < 2^63 and count < 2^63 keep it below 2^126
    long double m2_ = 0;   // sum of squared deviations from the mean (Welford/Chan)
};

}  // namespace pytps
