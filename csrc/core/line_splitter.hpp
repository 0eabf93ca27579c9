// Incremental line splitting shared by the SSE parser and the NDJSON (Ollama) reader.
//
// Rules (WHATWG event-stream, also right for NDJSON):
// - a line ends at CRLF, LF or CR; a CR that ends one chunk and an LF that starts the
//   next are one line end, not two;
// - one UTF-8 byte-order mark at the very start of the stream is dropped, even when its
//   three bytes arrive in separate chunks;
// - a line longer than max_line_bytes is not delivered: on_overflow() is called once
//   and the rest of that line is skipped, so memory stays bounded whatever the input.
// Lines are delivered as on_line(view, stable). A line that is whole inside one chunk is
// not copied and its view stays valid until feed() returns (stable == true); a line
// assembled across chunks lives in an internal buffer and is valid only during the
// callback (stable == false).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace pytps {

class LineSplitter {
public:
    explicit LineSplitter(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

    template <class OnLine, class OnOverflow>
    void feed(const char* p, size_t n, OnLine&& on_line, OnOverflow&& on_overflow) {
        const char* end = p + n;
        if (bom_matched_ >= 0) {
            p = consume_bom(p, end);
            if (p == end) return;
        }
        if (pending_cr_ && p < end) {
            pending_cr_ = false;
            if (*p == '\n') ++p;
        }
        // Streams rarely contain CR; find it once per chunk rather than once per line.
        const char* next_cr = nullptr;
        bool cr_known = false;
        while (p < end) {
            if (!cr_known || (next_cr && next_cr < p)) {
                next_cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<size_t>(end - p)));
                cr_known = true;
            }
            const char* limit = next_cr ? next_cr : end;
            const char* lf = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(limit - p)));
            const char* eol = lf ? lf : next_cr;
            if (!eol) {
                keep_partial(p, end, on_overflow);
                return;
            }
            const size_t len = static_cast<size_t>(eol - p);
            if (skipping_) {
                skipping_ = false;
            } else if (buf_.empty()) {
                if (len > max_line_bytes_) on_overflow();
                else on_line(std::string_view(p, len), true);
            } else {
                if (buf_.size() + len > max_line_bytes_) {
                    on_overflow();
                } else {
                    buf_.append(p, len);
                    on_line(std::string_view(buf_), false);
                }
                buf_.clear();
            }
            if (*eol == '\r') {
                if (eol + 1 < end) {
                    p = eol + 1 + (eol[1] == '\n' ? 1 : 0);
                } else {
                    pending_cr_ = true;
                    p = eol + 1;
                }
            } else {
                p = eol + 1;
            }
        }
    }

    // The unterminated last line so far (empty when the stream ended at a line end).
    std::string_view partial() const { return buf_; }
    bool skipping() const { return skipping_; }
    // Bytes that began like a BOM when the stream ended: they are line data if no more comes.
    size_t undecided_bom_bytes() const { return bom_matched_ > 0 ? static_cast<size_t>(bom_matched_) : 0; }
    size_t max_line_bytes() const { return max_line_bytes_; }

    // Back to the start-of-stream state (a BOM is dropped again).
    void reset() {
        buf_.clear();
        // Give back memory a huge line took, so a long-lived parser stays small.
        if (buf_.capacity() > (1u << 16)) std::string().swap(buf_);
        pending_cr_ = false;
        skipping_ = false;
        bom_matched_ = 0;
    }

private:
    template <class OnOverflow>
    void keep_partial(const char* p, const char* end, OnOverflow&& on_overflow) {
        if (skipping_) return;
        const size_t add = static_cast<size_t>(end - p);
        if (buf_.size() + add > max_line_bytes_) {
            buf_.clear();
            skipping_ = true;
            on_overflow();
            return;
        }
        buf_.append(p, add);
    }

    // Matches the stream's first bytes against EF BB BF. Returns where line data starts.
    const char* consume_bom(const char* p, const char* end) {
        static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
        while (p < end && bom_matched_ < 3) {
            if (static_cast<unsigned char>(*p) != bom[bom_matched_]) {
                // Not a BOM after all: the bytes matched so far are ordinary line data.
                buf_.append(reinterpret_cast<const char*>(bom), static_cast<size_t>(bom_matched_));
                bom_matched_ = -1;
                return p;
            }
            ++bom_matched_;
            ++p;
        }
        if (bom_matched_ == 3) bom_matched_ = -1;
        return p;
    }

    size_t max_line_bytes_;
    std::string buf_;
    bool pending_cr_ = false;
    bool skipping_ = false;
    int bom_matched_ = 0;  // BOM bytes matched so far at the stream start; -1 once decided
};

}  // namespace pytps
