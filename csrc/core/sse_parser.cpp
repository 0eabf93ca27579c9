#include "core/sse_parser.hpp"

#include <initializer_list>
#include <limits>
#include <string>

namespace pytps {

void SSEParser::set_retry(std::string_view value) {
    if (value.empty()) return;
    int64_t v = 0;
    for (const char c : value) {
        if (c < '0' || c > '9') return;
        const int d = c - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return;  // does not fit: ignored
        v = v * 10 + d;
    }
    retry_ms_ = v;
}

bool SSEParser::close() {
    const std::string_view partial = lines_.partial();
    const bool partial_line = lines_.undecided_bom_bytes() > 0 || (!partial.empty() && partial[0] != ':');
    const bool incomplete = !discarding_ && (!data_.empty() || partial_line);
    lines_.reset();
    data_is_view_ = false;
    // Like the line buffer, give back what a huge event took, so a parser reused for
    // many streams stays small (clear() alone kept up to max_line_bytes per parser).
    for (std::string* s : {&data_, &type_, &last_id_}) {
        if (s->capacity() > (size_t(1) << 16)) std::string().swap(*s);
        s->clear();
    }
    retry_ms_ = -1;
    discarding_ = false;
    return incomplete;
}

}  // namespace pytps
