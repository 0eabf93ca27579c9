#include "core/embedding_vectors.hpp"

#include <utility>

#include "core/json_scan.hpp"

namespace pytps {

namespace {

using json::JsonReader;
using json::Type;

using json::detail::is_digit;  // the reader's own character classes
using json::detail::is_ws;

// Reads one JSON number literal at body[i] (RFC 8259's grammar) and moves i past it: true when
// it is one json.loads reads as a finite float: a fraction or an exponent present, and
// |value| < 10^(integer digits + exponent) <= 10^308 < DBL_MAX. Exponents of more than six
// digits are left to Python whatever their sign. false: not such a literal (i then anywhere).
bool finite_float_literal(std::string_view body, size_t& i) {
    const size_t n = body.size();
    if (i < n && body[i] == '-') ++i;
    long long integer_digits = 0;
    if (i < n && body[i] == '0') {
        integer_digits = 1;
        ++i;
    } else {
        while (i < n && is_digit(body[i])) {
            ++integer_digits;
            ++i;
        }
        if (integer_digits == 0) return false;
    }
    bool fraction = false;
    if (i < n && body[i] == '.') {
        ++i;
        while (i < n && is_digit(body[i])) {
            fraction = true;
            ++i;
        }
        if (!fraction) return false;
    }
    long long exponent = 0;
    bool has_exponent = false;
    if (i < n && (body[i] == 'e' || body[i] == 'E')) {
        ++i;
        bool negative = false;
        if (i < n && (body[i] == '+' || body[i] == '-')) negative = body[i++] == '-';
        int digits = 0;
        while (i < n && is_digit(body[i])) {
            if (++digits > 6) return false;
            exponent = exponent * 10 + (body[i] - '0');
            ++i;
        }
        if (digits == 0) return false;
        has_exponent = true;
        if (negative) exponent = -exponent;
    }
    return (fraction || has_exponent) && integer_digits + exponent <= 308;
}

// The array at body[open] ('['): when it is one or more finite float literals (whitespace
// around them as JSON allows), their count, with `close` at its ']'; else 0.
size_t float_array(std::string_view body, size_t open, size_t& close) {
    size_t i = open + 1;
    size_t count = 0;
    for (;;) {
        while (i < body.size() && is_ws(body[i])) ++i;
        if (!finite_float_literal(body, i)) return 0;
        ++count;
        while (i < body.size() && is_ws(body[i])) ++i;
        if (i >= body.size()) return 0;
        if (body[i] == ']') {
            close = i;
            return count;
        }
        if (body[i] != ',') return 0;
        ++i;
    }
}

class Scan {
public:
    explicit Scan(std::string_view body) : body_(body), r_(body) {}

    bool run(std::string& out, std::vector<CountedVector>& counted) {
        if (!r_.begin_object()) return false;
        bool seen_data = false;
        std::string_view key;
        while (r_.next_key(key)) {
            if (key == "data") {
                if (seen_data) return false;  // json.loads keeps the last: leave the choice to it
                seen_data = true;
                if (!data_array()) return false;
            } else if (!r_.skip_value()) {
                return false;
            }
        }
        if (r_.failed() || !r_.finish() || counted_.empty()) return false;
        out.clear();
        out.reserve(body_.size());
        size_t from = 0;
        for (const auto& cut : cuts_) {  // [first, last): an emptied array's inside
            out.append(body_.data() + from, cut.first - from);
            from = cut.second;
        }
        out.append(body_.data() + from, body_.size() - from);
        counted = std::move(counted_);
        return true;
    }

private:
    bool data_array() {
        if (r_.peek() != Type::Array) return r_.skip_value();
        if (!r_.begin_array()) return false;
        for (size_t element = 0; r_.next_element(); ++element) {
            if (r_.peek() == Type::Object) {
                if (!data_element(element)) return false;
            } else if (!r_.skip_value()) {
                return false;
            }
        }
        return !r_.failed();
    }

    bool data_element(size_t element) {
        if (!r_.begin_object()) return false;
        bool seen = false;
        std::string_view key;
        while (r_.next_key(key)) {
            if (key == "embedding") {
                if (seen) return false;
                seen = true;
                if (!vector(element)) return false;
            } else if (!r_.skip_value()) {
                return false;
            }
        }
        return !r_.failed();
    }

    bool vector(size_t element) {
        if (r_.peek() != Type::Array) return r_.skip_value();
        const size_t open = r_.offset();  // at '['
        size_t close = 0;
        const size_t components = float_array(body_, open, close);
        if (components == 0) return r_.skip_value();  // JsonReader validates it; Python judges it
        // Past the array: the reader's nesting is what it was before the value (an array read
        // whole leaves none behind), so only its place moves.
        json::Checkpoint at;
        if (!r_.save(at)) return false;
        at.offset = close + 1;
        r_.restore(at);
        cuts_.emplace_back(open + 1, close);
        counted_.push_back(CountedVector{element, components});
        return true;
    }

    std::string_view body_;
    JsonReader r_;
    std::vector<std::pair<size_t, size_t>> cuts_;
    std::vector<CountedVector> counted_;
};

}  // namespace

bool empty_float_vectors(std::string_view body, std::string& out, std::vector<CountedVector>& counted) {
    out.clear();
    counted.clear();
    Scan scan(body);
    if (scan.run(out, counted)) return true;
    out.clear();
    counted.clear();
    return false;
}

}  // namespace pytps
