#include "emulator/embeddings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/json_scan.hpp"
#include "emulator/chat_request.hpp"
#include "emulator/json_write.hpp"
#include "emulator/request_object.hpp"

namespace pytps {

namespace {

using json::JsonReader;
using json::Type;

constexpr int64_t kMaxDimensions = 65536;

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ULL) {
    for (const unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// A uniform draw in [-1, 1) from (text hash, component): the same text gives the same vector.
float component(uint64_t h, int64_t j) {
    const uint64_t v = splitmix(h + static_cast<uint64_t>(j));
    return static_cast<float>(static_cast<double>(v >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

void base64_append(std::string& out, const unsigned char* p, size_t n) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        const uint32_t v = (uint32_t(p[i]) << 16) | (uint32_t(p[i + 1]) << 8) | p[i + 2];
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += tbl[(v >> 6) & 63];
        out += tbl[v & 63];
    }
    if (i < n) {
        uint32_t v = uint32_t(p[i]) << 16;
        if (i + 1 < n) v |= uint32_t(p[i + 1]) << 8;
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        out += '=';
    }
}

// A component as printf's "%.6f" writes it. std::to_chars gives the same characters (both are
// exactly rounded; checked on 10 million components) in a third of the time: printf was ~130 ns
// a component, most of the emulator's CPU for an embeddings request (~50 us of 384 components),
// enough to take a core the client shares (issue 42). A standard library without
// floating-point to_chars keeps printf (libc++ has it since LLVM 14 without announcing it, and
// on Apple systems only from macOS 13.3: as bindings/register_jsontext.cpp decides).
void append_fixed6(std::string& out, double value) {
    char buf[48];
#if defined(__cpp_lib_to_chars) || (defined(_LIBCPP_VERSION) && _LIBCPP_VERSION >= 14000 && !defined(__APPLE__))
    const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 6);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
#else
    const int n = std::snprintf(buf, sizeof buf, "%.6f", value);
    out.append(buf, static_cast<size_t>(n));
#endif
}

// The vector of one text, as a JSON array of floats or (base64) a string of float32 LE bytes.
void vector_json(std::string& out, std::string_view text, int64_t dim, uint64_t seed, bool base64) {
    const uint64_t h = fnv1a(text, 1469598103934665603ULL ^ seed);
    if (base64) {
        std::vector<unsigned char> bytes(static_cast<size_t>(dim) * 4);
        for (int64_t j = 0; j < dim; ++j) {
            const float f = component(h, j);
            std::memcpy(bytes.data() + j * 4, &f, 4);  // x86/ARM little-endian, as the providers send
        }
        out += '"';
        base64_append(out, bytes.data(), bytes.size());
        out += '"';
        return;
    }
    out += '[';
    out.reserve(out.size() + static_cast<size_t>(dim) * 10 + 2);
    for (int64_t j = 0; j < dim; ++j) {
        if (j) out += ',';
        append_fixed6(out, static_cast<double>(component(h, j)));
    }
    out += ']';
}

double relevance(uint64_t seed, std::string_view query, std::string_view doc) {
    const uint64_t h = splitmix(fnv1a(doc, fnv1a(query, 1469598103934665603ULL ^ seed)));
    return static_cast<double>(h >> 11) * 0x1.0p-53;
}

// A string, or an array of strings (rerank: also of {"text": ...} objects), into `out`.
bool read_texts(JsonReader& r, std::vector<std::string>& out, bool objects_ok, const char* key, std::string& error) {
    if (r.peek() == Type::String) {
        out.emplace_back();
        return r.read_string(out.back());
    }
    if (r.peek() != Type::Array) {
        if (!r.failed()) error = std::string("Invalid type for '") + key + "': expected a string or an array of strings.";
        return false;
    }
    r.begin_array();
    while (r.next_element()) {
        if (r.peek() == Type::String) {
            out.emplace_back();
            r.read_string(out.back());
        } else if (objects_ok && r.peek() == Type::Object) {
            out.emplace_back();
            r.begin_object();
            std::string_view k;
            while (r.next_key(k)) {
                if (k == "text" && r.peek() == Type::String) r.read_string(out.back());
                else r.skip_value();
            }
        } else {
            if (!r.failed()) error = std::string("Invalid type for an element of '") + key + "': expected a string.";
            return false;
        }
    }
    return !r.failed();
}

bool read_positive(JsonReader& r, const char* key, int64_t& out, int64_t max, std::string& error) {
    if (r.read_null()) return true;
    int64_t v = 0;
    if (r.read_int(v) && v >= 1 && v <= max) {
        out = v;
        return true;
    }
    if (!r.failed()) error = std::string("Invalid '") + key + "': expected an integer from 1 to " + std::to_string(max) + ".";
    return false;
}

}  // namespace

const char* body_api_name(const BodyApiPath& api) {
    switch (api.api) {
        case BodyApi::OpenAIEmbeddings: return "embeddings";
        case BodyApi::OllamaEmbed: return "ollama_embed";
        case BodyApi::Rerank: return "rerank";
    }
    return "?";
}

bool parse_body_request(const BodyApiPath& api, std::string_view body, BodyRequest& req, std::string& error) {
    const bool rerank = api.api == BodyApi::Rerank;
    const char* required = rerank ? "documents" : "input";
    bool have_required = false, have_query = !rerank;
    JsonReader r(body);
    const bool opened = each_request_key(r, req.model, error, [&](std::string_view key) {
        if (key == required) {
            have_required = read_texts(r, req.inputs, rerank, required, error);
        } else if (key == "query" && rerank) {
            have_query = true;
            if (!r.read_string(req.query) && !r.failed()) error = "Invalid type for 'query': expected a string.";
        } else if (key == "top_n" && rerank) {
            read_positive(r, "top_n", req.top_n, INT32_MAX, error);
        } else if (key == "return_documents" && rerank) {
            if (!r.read_bool(req.return_documents) && !r.read_null() && !r.failed())
                error = "Invalid type for 'return_documents': expected a boolean.";
        } else if (key == "dimensions" && !rerank) {
            read_positive(r, "dimensions", req.dimensions, kMaxDimensions, error);
        } else if (key == "encoding_format" && api.api == BodyApi::OpenAIEmbeddings) {
            std::string f;
            if (r.read_null()) return true;
            if (!r.read_string(f) || (f != "float" && f != "base64")) {
                if (!r.failed()) error = "Invalid 'encoding_format': expected 'float' or 'base64'.";
            } else {
                req.base64 = f == "base64";
            }
        } else {
            r.skip_value();
        }
        return true;
    });
    if (!opened) return false;
    if (!read_to_end(r, error)) return false;
    if (!have_required || !have_query) {
        error = std::string("Missing required parameter: '") + (have_query ? required : "query") + "'.";
        return false;
    }
    if (req.inputs.empty()) {
        error = std::string("'") + required + "' must not be empty.";
        return false;
    }
    return true;
}

std::vector<int64_t> body_input_tokens(const BodyApiPath& api, const BodyRequest& req) {
    std::vector<int64_t> out;
    out.reserve(req.inputs.size());
    const int64_t query = api.api == BodyApi::Rerank ? static_cast<int64_t>(req.query.size()) : 0;
    for (const std::string& s : req.inputs) out.push_back(std::max<int64_t>(1, (query + static_cast<int64_t>(s.size()) + 3) / 4));
    return out;
}

std::string body_response(const BodyApiPath& api, const BodyRequest& req, const std::string& id,
                          const std::string& model, int64_t dim, uint64_t seed, int64_t prompt_tokens,
                          int64_t duration_ns) {
    std::string out;
    const size_t n = req.inputs.size();
    if (api.api == BodyApi::OpenAIEmbeddings) {
        out += "{\"object\":\"list\",\"data\":[";
        for (size_t i = 0; i < n; ++i) {
            if (i) out += ',';
            out += "{\"object\":\"embedding\",\"index\":";
            json_int(out, static_cast<int64_t>(i));
            out += ",\"embedding\":";
            vector_json(out, req.inputs[i], dim, seed, req.base64);
            out += '}';
        }
        out += "],\"model\":";
        json_str(out, model);
        out += ",\"usage\":{\"prompt_tokens\":";
        json_int(out, prompt_tokens);
        out += ",\"total_tokens\":";
        json_int(out, prompt_tokens);
        out += "}}";
    } else if (api.api == BodyApi::OllamaEmbed) {
        out += "{\"model\":";
        json_str(out, model);
        out += ",\"embeddings\":[";
        for (size_t i = 0; i < n; ++i) {
            if (i) out += ',';
            vector_json(out, req.inputs[i], dim, seed, false);
        }
        out += "],\"total_duration\":";
        json_int(out, duration_ns);
        out += ",\"load_duration\":0,\"prompt_eval_count\":";
        json_int(out, prompt_tokens);
        out += '}';
    } else {
        std::vector<size_t> order(n);
        std::vector<double> score(n);
        std::iota(order.begin(), order.end(), size_t{0});
        for (size_t i = 0; i < n; ++i) score[i] = relevance(seed, req.query, req.inputs[i]);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
        const size_t top = req.top_n < 0 ? n : std::min(n, static_cast<size_t>(req.top_n));
        out += "{\"id\":";
        json_str(out, id);
        out += ",\"model\":";
        json_str(out, model);
        out += ",\"usage\":{\"total_tokens\":";
        json_int(out, prompt_tokens);
        out += "},\"results\":[";
        char buf[32];
        for (size_t k = 0; k < top; ++k) {
            const size_t i = order[k];
            if (k) out += ',';
            out += "{\"index\":";
            json_int(out, static_cast<int64_t>(i));
            if (req.return_documents) {
                out += ",\"document\":{\"text\":";
                json_str(out, req.inputs[i]);
                out += '}';
            }
            out += ",\"relevance_score\":";
            const int len = std::snprintf(buf, sizeof buf, "%.8f", score[i]);
            out.append(buf, static_cast<size_t>(len));
            out += '}';
        }
        out += "]}";
    }
    return out;
}

}  // namespace pytps
