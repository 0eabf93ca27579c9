#include "core/audio_body.hpp"

#include <algorithm>
#include <cstring>

namespace pytps {

namespace {
uint32_t le32(const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return static_cast<uint32_t>(u[0]) | static_cast<uint32_t>(u[1]) << 8 | static_cast<uint32_t>(u[2]) << 16 |
           static_cast<uint32_t>(u[3]) << 24;
}
uint16_t le16(const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return static_cast<uint16_t>(u[0] | u[1] << 8);
}
constexpr uint32_t tag(const char (&s)[5]) { return static_cast<uint32_t>(static_cast<unsigned char>(s[0])) |
                                                   static_cast<uint32_t>(static_cast<unsigned char>(s[1])) << 8 |
                                                   static_cast<uint32_t>(static_cast<unsigned char>(s[2])) << 16 |
                                                   static_cast<uint32_t>(static_cast<unsigned char>(s[3])) << 24; }
}  // namespace

void AudioBodyScanner::read_fmt() {
    if (fmt_body_.size() < 16) {
        fail("the WAV fmt chunk is shorter than 16 bytes");
        return;
    }
    const char* p = fmt_body_.data();
    fmt_.format_tag = le16(p);
    fmt_.channels = le16(p + 2);
    fmt_.sample_rate = le32(p + 4);
    fmt_.bits_per_sample = le16(p + 14);
}

size_t AudioBodyScanner::feed(const char* data, size_t n) {
    if (!wav_) return n;
    size_t audio = 0;
    size_t i = 0;
    while (i < n) {
        switch (state_) {
            case State::samples:
                audio += n - i;
                return audio;
            case State::failed:
                return audio;
            case State::riff: {
                const size_t take = std::min<size_t>(12 - head_.size(), n - i);
                head_.append(data + i, take);
                i += take;
                if (head_.size() < 12) break;
                if (le32(head_.data()) != tag("RIFF") || le32(head_.data() + 8) != tag("WAVE")) {
                    fail("the body does not start with a RIFF/WAVE header");
                    return audio;
                }
                head_.clear();
                state_ = State::chunk_head;
                break;
            }
            case State::chunk_head: {
                const size_t take = std::min<size_t>(8 - head_.size(), n - i);
                head_.append(data + i, take);
                i += take;
                if (head_.size() < 8) break;
                chunk_id_ = le32(head_.data());
                const uint32_t size = le32(head_.data() + 4);
                head_.clear();
                if (chunk_id_ == tag("data")) {
                    if (fmt_.sample_rate == 0) {
                        fail("the WAV data chunk comes before its fmt chunk");
                        return audio;
                    }
                    state_ = State::samples;
                } else {
                    chunk_left_ = static_cast<uint64_t>(size) + (size & 1u);  // chunks are padded to even sizes
                    fmt_body_.clear();
                    state_ = State::chunk_body;
                    if (chunk_left_ == 0 && chunk_id_ == tag("fmt ")) read_fmt();
                }
                break;
            }
            case State::chunk_body: {
                const size_t take = static_cast<size_t>(std::min<uint64_t>(chunk_left_, n - i));
                if (chunk_id_ == tag("fmt ") && fmt_body_.size() < kMaxFmt)
                    fmt_body_.append(data + i, std::min(take, kMaxFmt - fmt_body_.size()));
                i += take;
                chunk_left_ -= take;
                if (chunk_left_ == 0) {
                    if (chunk_id_ == tag("fmt ")) read_fmt();
                    if (state_ != State::failed) state_ = State::chunk_head;
                }
                break;
            }
        }
    }
    return audio;
}

}  // namespace pytps
