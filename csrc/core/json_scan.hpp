// A small, strict, pull-style JSON reader for the few fields pytps needs from each
// streamed event (and from the requests the emulator receives).
//
// Why not a DOM: one event is a few hundred bytes of which we want one or two strings;
// building a tree costs allocations per event. The reader walks the text once, decodes
// only the strings it is asked for, and validates everything it skips, so a malformed
// event is always detected (RFC 8259 grammar; no comments, no trailing commas, no NaN).
//
// Strings: escapes are decoded exactly, surrogate pairs are joined; a lone surrogate
// escape decodes to U+FFFD. Raw bytes that are not valid UTF-8 are replaced by U+FFFD,
// one per maximal subpart (the Unicode recommended practice, which is what Python's
// bytes.decode("utf-8", "replace") and the WHATWG decoder do), so every decoded string
// is valid UTF-8.
//
// Usage:
//   JsonReader r(text);
//   if (!r.begin_object()) ...;
//   std::string_view key;
//   while (r.next_key(key)) { if (key == "x") r.read_string(out); else r.skip_value(); }
//   if (!r.finish()) ... r.error() ...
// Every call returns false on malformed input (and then r.failed() is true and stays
// true), so a chain of calls needs one check at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pytps {
namespace json {

enum class Type { Null, Bool, Number, String, Array, Object, End, Error };

// Appends the UTF-8 encoding of code point cp (must be a scalar value) to out.
void append_utf8(std::string& out, uint32_t cp);

// Appends bytes to out, replacing invalid UTF-8 with U+FFFD per maximal subpart.
void append_utf8_sanitized(std::string& out, std::string_view bytes);

class JsonReader {
public:
    // Nesting deeper than this is an error, so a hostile input cannot exhaust memory.
    static constexpr int kMaxDepth = 512;

    explicit JsonReader(std::string_view text) noexcept
        : p_(text.data()), end_(text.data() + text.size()), begin_(text.data()) {}

    // Type of the next value (whitespace skipped); End at the end of input.
    Type peek() noexcept;

    // Objects: begin_object() consumes '{'; next_key() then yields each key (its value
    // must be read or skipped before the next call) and returns false after consuming
    // the closing '}' (or on error: check failed()).
    bool begin_object() noexcept;
    bool next_key(std::string_view& key) noexcept;

    // Arrays: begin_array() consumes '['; next_element() returns true when a value
    // follows (read or skip it) and false after consuming ']' (or on error).
    bool begin_array() noexcept;
    bool next_element() noexcept;

    // Scalars. A call on a value of another type returns false without consuming it and
    // without failing the reader (so callers can try alternatives or skip it).
    bool read_string(std::string& out_append) noexcept;  // decoded, appended to out
    bool read_raw_string(std::string_view& raw) noexcept;  // undecoded body, no quotes
    bool read_int(int64_t& out) noexcept;  // an integer literal that fits int64
    bool read_double(double& out) noexcept;
    bool read_bool(bool& out) noexcept;
    bool read_null() noexcept;

    // Skips (and validates) one whole value of any type.
    bool skip_value() noexcept;

    // After the top-level value: true when only whitespace remains.
    bool finish() noexcept;

    bool failed() const noexcept { return error_ != nullptr; }
    const char* error() const noexcept { return error_ ? error_ : ""; }
    size_t error_offset() const noexcept { return error_offset_; }
    size_t offset() const noexcept { return static_cast<size_t>(p_ - begin_); }
    std::string_view input() const noexcept { return {begin_, static_cast<size_t>(end_ - begin_)}; }

private:
    bool fail(const char* what) noexcept;
    void skip_ws() noexcept;
    // Scans a string body starting after the opening quote; on success p_ is past the
    // closing quote. When out is non-null the decoded body is appended to it.
    bool scan_string(std::string* out, bool* had_escape) noexcept;
    bool scan_number(double* d, int64_t* i, bool* is_int) noexcept;
    bool expect_literal(const char* lit, size_t n) noexcept;
    // Consumes the ',' or closing bracket after a member/element. Returns true when
    // another member/element follows.
    bool after_value(char close) noexcept;

    const char* p_;
    const char* end_;
    const char* begin_;
    const char* error_ = nullptr;
    size_t error_offset_ = 0;
    // Per nesting level: whether the container has produced its first member yet.
    // Bit stack; kMaxDepth bits.
    uint64_t first_bits_[kMaxDepth / 64] = {};
    // Per nesting level: 1 for an object, 0 for an array (skip_value walks containers
    // iteratively with this instead of recursing).
    uint64_t object_bits_[kMaxDepth / 64] = {};
    int depth_ = 0;
    std::string key_scratch_;
};

}  // namespace json
}  // namespace pytps
