// Histogram <-> bytes. Layout (little-endian; docs/histogram.md has the table):
//   0  magic "PTPSHIST"          8  u16 version (1)        10 u8 significant_digits
//   11 u8 reserved (0)           12 u32 payload length L   16 i64 lowest
//   24 i64 highest               32 i64 total count        40 i64 min   48 i64 max
//   56 u64 sum low, 64 i64 sum high (exact 128-bit sum)    72 f64 m2 high, 80 f64 m2 low
//   88 payload: the counts as zigzag LEB128 varints; a positive n is one index holding n, a
//      negative -r skips r empty indices (zeros are never written)
//   88+L u64 FNV-1a 64 of bytes [0, 88+L)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/histogram.hpp"

namespace pytps {

namespace {

__extension__ using uint128_t = unsigned __int128;

constexpr char kMagic[8] = {'P', 'T', 'P', 'S', 'H', 'I', 'S', 'T'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 88;
constexpr size_t kChecksumSize = 8;

void put_u64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

uint64_t double_bits(double d) {
    uint64_t v;
    std::memcpy(&v, &d, sizeof v);
    return v;
}

double bits_double(uint64_t v) {
    double d;
    std::memcpy(&d, &v, sizeof d);
    return d;
}

void put_varint(std::string& out, int64_t n) {
    uint64_t z = (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63);
    while (z >= 0x80) {
        out.push_back(static_cast<char>((z & 0x7f) | 0x80));
        z >>= 7;
    }
    out.push_back(static_cast<char>(z));
}

uint64_t fnv1a64(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

[[noreturn]] void bad(const std::string& what) {
    throw std::invalid_argument("Histogram.from_bytes: " + what);
}

}  // namespace

std::string Histogram::to_bytes() const {
    std::string payload;
    payload.reserve(64);
    const size_t half = static_cast<size_t>(sub_bucket_half_count_);
    int64_t zeros = 0;
    for (const auto& chunk : chunks_) {
        if (!chunk) {
            zeros += static_cast<int64_t>(half);
            continue;
        }
        for (size_t j = 0; j < half; ++j) {
            const int64_t c = chunk[j];
            if (c == 0) {
                ++zeros;
                continue;
            }
            if (zeros) put_varint(payload, -zeros);
            zeros = 0;
            put_varint(payload, c);
        }
    }

    std::string out(kMagic, sizeof kMagic);
    out.push_back(static_cast<char>(kVersion & 0xff));
    out.push_back(static_cast<char>(kVersion >> 8));
    out.push_back(static_cast<char>(significant_digits_));
    out.push_back(0);
    const uint32_t len = static_cast<uint32_t>(payload.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    put_u64(out, static_cast<uint64_t>(lowest_));
    put_u64(out, static_cast<uint64_t>(highest_));
    put_u64(out, static_cast<uint64_t>(total_count_));
    put_u64(out, static_cast<uint64_t>(min()));
    put_u64(out, static_cast<uint64_t>(max()));
    put_u64(out, static_cast<uint64_t>(static_cast<uint128_t>(sum_)));
    put_u64(out, static_cast<uint64_t>(static_cast<uint128_t>(sum_) >> 64));
    // m2 as a double-double pair, so the x87 long double survives the trip bit for bit.
    const double m2_hi = static_cast<double>(m2_);
    const double m2_lo = static_cast<double>(m2_ - m2_hi);
    put_u64(out, double_bits(m2_hi));
    put_u64(out, double_bits(m2_lo));
    out += payload;
    put_u64(out, fnv1a64(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
    return out;
}

Histogram Histogram::from_bytes(const uint8_t* data, size_t size) {
    const size_t magic_seen = std::min(size, sizeof kMagic);
    if (std::memcmp(data, kMagic, magic_seen) != 0)
        bad("not a pytps histogram: the data does not start with the magic bytes b'PTPSHIST'");
    if (size < kHeaderSize + kChecksumSize)
        bad("truncated: " + std::to_string(size) + " bytes, but the header and checksum alone are " +
            std::to_string(kHeaderSize + kChecksumSize) + " bytes");
    const uint16_t version = static_cast<uint16_t>(data[8] | (data[9] << 8));
    if (version != kVersion)
        bad("format version " + std::to_string(version) +
            " is not supported (this pytps reads version " + std::to_string(kVersion) + ")");
    if (data[11] != 0) bad("reserved header byte is " + std::to_string(data[11]) + ", expected 0");
    const uint32_t len = static_cast<uint32_t>(data[12]) | (static_cast<uint32_t>(data[13]) << 8) |
                         (static_cast<uint32_t>(data[14]) << 16) |
                         (static_cast<uint32_t>(data[15]) << 24);
    const size_t expected = kHeaderSize + static_cast<size_t>(len) + kChecksumSize;
    if (size < expected)
        bad("truncated: the header announces " + std::to_string(expected) + " bytes but only " +
            std::to_string(size) + " were given");
    if (size > expected)
        bad(std::to_string(size - expected) + " unexpected trailing bytes after the " +
            std::to_string(expected) + "-byte histogram");
    if (fnv1a64(data, kHeaderSize + len) != get_u64(data + kHeaderSize + len))
        bad("checksum mismatch: the data is corrupted");

    const int sig = data[10];
    const auto i64 = [&](size_t off) { return static_cast<int64_t>(get_u64(data + off)); };
    Histogram h = [&] {
        try {
            return Histogram(i64(16), i64(24), sig);
        } catch (const std::invalid_argument& e) {
            bad(std::string("invalid parameters: ") + e.what());
        }
    }();
    const int64_t total = i64(32), lo = i64(40), hi = i64(48);
    const int128_t sum = static_cast<int128_t>(
        (static_cast<uint128_t>(get_u64(data + 64)) << 64) | get_u64(data + 56));
    const double m2_hi = bits_double(get_u64(data + 72)), m2_lo = bits_double(get_u64(data + 80));

    // Counts.
    const uint8_t* p = data + kHeaderSize;
    const uint8_t* end = p + len;
    size_t index = 0;
    int64_t seen = 0;
    size_t first = SIZE_MAX, last = 0;
    while (p < end) {
        uint64_t z = 0;
        int shift = 0;
        for (;;) {
            if (p == end) bad("counts payload ends inside a varint");
            if (shift > 63) bad("counts payload has a varint longer than 10 bytes");
            const uint8_t b = *p++;
            z |= static_cast<uint64_t>(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80)) break;
        }
        const int64_t n = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
        if (n == 0) bad("counts payload holds a zero entry, which the format never writes");
        if (n < 0) {
            // -(n + 1) + 1 stays in range for n == INT64_MIN.
            const uint64_t skip = static_cast<uint64_t>(-(n + 1)) + 1;
            if (skip > h.counts_len_ - index) bad("counts payload runs past the last bucket");
            index += static_cast<size_t>(skip);
            continue;
        }
        if (index >= h.counts_len_) bad("counts payload runs past the last bucket");
        if (n > INT64_MAX - seen) bad("bucket counts add up past 2^63-1");
        seen += n;
        h.add_at_index(index, n);
        if (first == SIZE_MAX) first = index;
        last = index;
        ++index;
    }

    if (seen != total)
        bad("bucket counts add up to " + std::to_string(seen) + " but the header says count=" +
            std::to_string(total));
    if (total == 0) {
        if (lo != 0 || hi != 0 || sum != 0 || m2_hi != 0 || m2_lo != 0)
            bad("an empty histogram must have min, max, sum and m2 all 0");
        return h;
    }
    if (lo < h.lowest_ || hi > h.highest_ || lo > hi)
        bad("min=" + std::to_string(lo) + " / max=" + std::to_string(hi) +
            " do not fit the range [" + std::to_string(h.lowest_) + ", " +
            std::to_string(h.highest_) + "]");
    if (h.index_of(lo) != first || h.index_of(hi) != last)
        bad("min/max do not fall in the first/last non-empty buckets");
    if (sum < static_cast<int128_t>(lo) * total || sum > static_cast<int128_t>(hi) * total)
        bad("the sum of the values lies outside [min*count, max*count]");
    const long double m2 = static_cast<long double>(m2_hi) + m2_lo;
    if (!std::isfinite(m2_hi) || !std::isfinite(m2_lo) || m2 < 0)
        bad("the squared-deviation sum m2 is negative or not finite");
    h.total_count_ = total;
    h.min_ = lo;
    h.max_ = hi;
    h.sum_ = sum;
    h.m2_ = m2;
    return h;
}

}  // namespace pytps
