// The audio in a raw audio body, read by read: which of a read's bytes are audio samples.
// PCM is all samples; a WAV body starts with a RIFF header (its `fmt ` chunk says the sample
// rate, channels and sample width) and any chunks before `data`, none of which is audio. The
// header may be split anywhere across reads. Streaming servers write the `data` size as
// 0xFFFFFFFF or 0 (the length is not known when the header goes out): every byte after the
// `data` chunk's head is audio, whatever its size says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pytps {

struct AudioFormat {
    int64_t sample_rate = 0;      // Hz; 0: not stated by the body (PCM: the request says)
    int64_t channels = 0;
    int64_t bits_per_sample = 0;
    int64_t format_tag = 0;       // WAVE_FORMAT_*: 1 PCM, 3 IEEE float, 0xFFFE extensible
};

class AudioBodyScanner {
public:
    explicit AudioBodyScanner(bool wav) : wav_(wav) {}

    // The audio bytes among these n (the rest is header). Never throws: a body that is not
    // WAV sets error() and counts nothing more.
    size_t feed(const char* data, size_t n);

    const AudioFormat& format() const { return fmt_; }
    // True once the samples began (PCM: from the first byte).
    bool in_samples() const { return !wav_ || state_ == State::samples; }
    // Why the header could not be read, or null.
    const char* error() const { return error_; }
    void reset() { *this = AudioBodyScanner(wav_); }

private:
    enum class State : uint8_t { riff, chunk_head, chunk_body, samples, failed };
    // The longest `fmt ` body kept (WAVE_FORMAT_EXTENSIBLE's is 40 bytes).
    static constexpr size_t kMaxFmt = 64;

    bool wav_;
    State state_ = State::riff;
    std::string head_;          // bytes of the RIFF header or the current chunk head
    std::string fmt_body_;
    uint32_t chunk_id_ = 0;
    uint64_t chunk_left_ = 0;   // bytes of the current non-data chunk still to skip (with padding)
    AudioFormat fmt_;
    const char* error_ = nullptr;

    void fail(const char* why) {
        error_ = why;
        state_ = State::failed;
    }
    void read_fmt();
};

}  // namespace pytps
