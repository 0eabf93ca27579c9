// Histogram queries: percentiles, mean/stddev, equality.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/histogram.hpp"

namespace pytps {

double Histogram::mean() const noexcept {
    if (total_count_ == 0) return 0.0;
    return static_cast<double>(detail::to_ld(sum_) / total_count_);
}

double Histogram::stddev() const noexcept {
    if (total_count_ == 0) return 0.0;
    return static_cast<double>(std::sqrt(m2_ / total_count_));
}

int64_t Histogram::rank_of(double p) const {
    if (!(p >= 0.0 && p <= 100.0))
    {
        std::ostringstream s;
        s.precision(17);
        s << "Histogram: percentile must be in [0, 100] (got " << p << ")";
        throw std::invalid_argument(s.str());
    }
    const long double r = static_cast<long double>(p) / 100 * total_count_;
    long double k = std::floor(r);
    // 99.9 is 99.900000000000006 in binary: a rank a few ulps above an integer is that integer.
    if (r - k > r * (16 * DBL_EPSILON)) k += 1;
    if (k < 1) k = 1;
    if (k > total_count_) k = static_cast<long double>(total_count_);
    return static_cast<int64_t>(k);
}

int64_t Histogram::value_at_rank(int64_t rank) const {
    if (rank <= 1) return min_;
    if (rank >= total_count_) return max_;
    const size_t half = static_cast<size_t>(sub_bucket_half_count_);
    int64_t seen = 0;
    for (size_t c = 0; c < chunks_.size(); ++c) {
        const int64_t* chunk = chunks_[c].get();
        if (!chunk) continue;
        for (size_t j = 0; j < half; ++j) {
            seen += chunk[j];
            if (seen >= rank)
                return std::min(highest_equivalent_value(value_from_index(c * half + j)), max_);
        }
    }
    return max_;  // unreachable while the counts sum to total_count_
}

int64_t Histogram::value_at_percentile(double p) const {
    const int64_t rank = rank_of(p);  // validates p even when empty
    if (total_count_ == 0) return 0;
    return value_at_rank(rank);
}

std::vector<int64_t> Histogram::percentiles(const std::vector<double>& ps) const {
    std::vector<int64_t> out(ps.size(), 0);
    std::vector<std::pair<int64_t, size_t>> ranks;
    ranks.reserve(ps.size());
    for (size_t i = 0; i < ps.size(); ++i) ranks.emplace_back(rank_of(ps[i]), i);
    if (total_count_ == 0) return out;
    std::sort(ranks.begin(), ranks.end());
    // One walk over the counts answers every rank in increasing order.
    const size_t half = static_cast<size_t>(sub_bucket_half_count_);
    size_t next = 0;
    while (next < ranks.size() && ranks[next].first <= 1) out[ranks[next++].second] = min_;
    int64_t seen = 0;
    for (size_t c = 0; c < chunks_.size() && next < ranks.size(); ++c) {
        const int64_t* chunk = chunks_[c].get();
        if (!chunk) continue;
        int64_t want = ranks[next].first;
        for (size_t j = 0; j < half; ++j) {
            seen += chunk[j];
            if (seen < want) continue;
            const int64_t v = std::min(highest_equivalent_value(value_from_index(c * half + j)), max_);
            for (; next < ranks.size() && ranks[next].first <= seen; ++next)
                out[ranks[next].second] = ranks[next].first >= total_count_ ? max_ : v;
            if (next == ranks.size()) break;
            want = ranks[next].first;
        }
    }
    while (next < ranks.size()) out[ranks[next++].second] = max_;
    return out;
}

bool Histogram::operator==(const Histogram& o) const {
    if (lowest_ != o.lowest_ || highest_ != o.highest_ ||
        significant_digits_ != o.significant_digits_ || total_count_ != o.total_count_ ||
        min() != o.min() || max() != o.max() || sum_ != o.sum_ || m2_ != o.m2_)
        return false;
    for (size_t i = 0; i < counts_len_; ++i)
        if (count_at_index(i) != o.count_at_index(i)) return false;
    return true;
}

}  // namespace pytps
