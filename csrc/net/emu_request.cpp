#include "net/emu_request.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace pytps {

const char* api_name(Api api) {
    switch (api) {
        case Api::chat: return "chat";
        case Api::completions: return "completions";
        case Api::responses: return "responses";
        case Api::messages: return "messages";
        case Api::ollama_chat: return "ollama_chat";
        case Api::ollama_generate: return "ollama_generate";
    }
    return "?";
}

namespace {

// A small strict JSON tree. Request bodies are a few KB, read once, so a tree is simplest.
struct JVal {
    enum Type : uint8_t { null_t, bool_t, num_t, str_t, arr_t, obj_t } type = null_t;
    bool b = false;
    double num = 0.0;
    bool integral = false;
    std::string s;
    std::vector<JVal> arr;
    std::vector<std::pair<std::string, JVal>> obj;

    const JVal* get(std::string_view key) const {
        if (type != obj_t) return nullptr;
        for (const auto& kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
};

class Reader {
public:
    Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

    bool document(JVal& v) {
        ws();
        if (!value(v, 0)) return false;
        ws();
        if (p_ != end_) return fail("unexpected data after the JSON value");
        return true;
    }
    const std::string& error() const { return err_; }
    size_t offset(const char* base) const { return static_cast<size_t>(p_ - base); }

private:
    const char* p_;
    const char* end_;
    std::string err_;

    bool fail(const char* what) {
        if (err_.empty()) err_ = what;
        return false;
    }
    void ws() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    }
    bool lit(const char* word, size_t n) {
        if (static_cast<size_t>(end_ - p_) < n || std::string_view(p_, n) != std::string_view(word, n))
            return fail("invalid literal");
        p_ += n;
        return true;
    }

    bool value(JVal& v, int depth) {
        if (depth > 64) return fail("nesting deeper than 64 levels");
        if (p_ == end_) return fail("unexpected end of input");
        switch (*p_) {
            case '{': return object(v, depth);
            case '[': return array(v, depth);
            case '"': v.type = JVal::str_t; return string(v.s);
            case 't': v.type = JVal::bool_t; v.b = true; return lit("true", 4);
            case 'f': v.type = JVal::bool_t; v.b = false; return lit("false", 5);
            case 'n': v.type = JVal::null_t; return lit("null", 4);
            default: return number(v);
        }
    }

    bool object(JVal& v, int depth) {
        v.type = JVal::obj_t;
        ++p_;
        ws();
        if (p_ != end_ && *p_ == '}') { ++p_; return true; }
        for (;;) {
            ws();
            if (p_ == end_ || *p_ != '"') return fail("expected a string key");
            std::pair<std::string, JVal> kv;
            if (!string(kv.first)) return false;
            ws();
            if (p_ == end_ || *p_ != ':') return fail("expected ':' after a key");
            ++p_;
            ws();
            if (!value(kv.second, depth + 1)) return false;
            v.obj.push_back(std::move(kv));
            ws();
            if (p_ == end_) return fail("unexpected end of input in an object");
            if (*p_ == ',') { ++p_; continue; }
            if (*p_ == '}') { ++p_; return true; }
            return fail("expected ',' or '}' in an object");
        }
    }

    bool array(JVal& v, int depth) {
        v.type = JVal::arr_t;
        ++p_;
        ws();
        if (p_ != end_ && *p_ == ']') { ++p_; return true; }
        for (;;) {
            ws();
            v.arr.emplace_back();
            if (!value(v.arr.back(), depth + 1)) return false;
            ws();
            if (p_ == end_) return fail("unexpected end of input in an array");
            if (*p_ == ',') { ++p_; continue; }
            if (*p_ == ']') { ++p_; return true; }
            return fail("expected ',' or ']' in an array");
        }
    }

    static int hexval(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
    bool hex4(unsigned& out) {
        if (end_ - p_ < 4) return fail("short \\u escape");
        out = 0;
        for (int i = 0; i < 4; ++i) {
            int h = hexval(p_[i]);
            if (h < 0) return fail("invalid \\u escape");
            out = out * 16 + static_cast<unsigned>(h);
        }
        p_ += 4;
        return true;
    }
    static void utf8(std::string& s, unsigned cp) {
        if (cp < 0x80) {
            s.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    bool string(std::string& s) {
        ++p_;  // opening quote
        for (;;) {
            if (p_ == end_) return fail("unterminated string");
            unsigned char c = static_cast<unsigned char>(*p_++);
            if (c == '"') return true;
            if (c < 0x20) return fail("control character in a string");
            if (c != '\\') { s.push_back(static_cast<char>(c)); continue; }
            if (p_ == end_) return fail("unterminated string");
            char e = *p_++;
            switch (e) {
                case '"': s.push_back('"'); break;
                case '\\': s.push_back('\\'); break;
                case '/': s.push_back('/'); break;
                case 'b': s.push_back('\b'); break;
                case 'f': s.push_back('\f'); break;
                case 'n': s.push_back('\n'); break;
                case 'r': s.push_back('\r'); break;
                case 't': s.push_back('\t'); break;
                case 'u': {
                    unsigned cp;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        unsigned lo;
                        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("lone surrogate in \\u escape");
                        p_ += 2;
                        if (!hex4(lo)) return false;
                        if (lo < 0xDC00 || lo >= 0xE000) return fail("lone surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        return fail("lone surrogate in \\u escape");
                    }
                    utf8(s, cp);
                    break;
                }
                default: return fail("invalid escape in a string");
            }
        }
    }

    bool number(JVal& v) {
        const char* start = p_;
        bool integral = true;
        if (p_ != end_ && *p_ == '-') ++p_;
        if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("invalid value");
        if (*p_ == '0') {
            ++p_;
        } else {
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        if (p_ != end_ && *p_ == '.') {
            integral = false;
            ++p_;
            if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("invalid number");
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            integral = false;
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("invalid number");
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        v.type = JVal::num_t;
        v.integral = integral;
        v.num = std::strtod(std::string(start, p_).c_str(), nullptr);
        return true;
    }
};

void sum_strings(const JVal& v, int64_t& chars) {
    switch (v.type) {
        case JVal::str_t: chars += static_cast<int64_t>(v.s.size()); break;
        case JVal::arr_t: for (const auto& x : v.arr) sum_strings(x, chars); break;
        case JVal::obj_t: for (const auto& kv : v.obj) sum_strings(kv.second, chars); break;
        default: break;
    }
}

bool read_bool(const JVal& root, const char* key, bool& out, std::string& error) {
    const JVal* v = root.get(key);
    if (!v || v->type == JVal::null_t) return true;
    if (v->type != JVal::bool_t) {
        error = std::string("'") + key + "' must be a boolean";
        return false;
    }
    out = v->b;
    return true;
}

bool read_limit(const JVal* v, const char* key, int64_t& out, bool allow_minus_one, std::string& error) {
    if (!v || v->type == JVal::null_t) return true;
    if (v->type != JVal::num_t || !v->integral || v->num > 1e15 ||
        (v->num < 1 && !(allow_minus_one && (v->num == -1 || v->num == -2)))) {
        error = std::string("'") + key + "' must be a positive integer";
        return false;
    }
    if (v->num >= 1) out = static_cast<int64_t>(v->num);
    return true;
}

}  // namespace

bool parse_chat_request(Api api, std::string_view body, ChatRequest& req, std::string& error) {
    JVal root;
    Reader reader(body);
    if (!reader.document(root)) {
        error = "We could not parse the JSON body of your request: " + reader.error() + " at byte " +
                std::to_string(reader.offset(body.data())) + ".";
        return false;
    }
    if (root.type != JVal::obj_t) {
        error = "The request body must be a JSON object.";
        return false;
    }
    const bool ollama = api == Api::ollama_chat || api == Api::ollama_generate;

    if (const JVal* m = root.get("model")) {
        if (m->type != JVal::str_t) { error = "'model' must be a string"; return false; }
        req.model = m->s;
    }
    req.stream = ollama;  // Ollama streams unless told not to; the others only when asked
    if (!read_bool(root, "stream", req.stream, error)) return false;

    if (const JVal* so = root.get("stream_options"); so && so->type != JVal::null_t) {
        if (so->type != JVal::obj_t) { error = "'stream_options' must be an object"; return false; }
        if (!req.stream) { error = "The 'stream_options' parameter is only allowed when 'stream' is enabled."; return false; }
        if (!read_bool(*so, "include_usage", req.include_usage, error)) return false;
        if (!read_bool(*so, "continuous_usage_stats", req.continuous_usage, error)) return false;
    }

    // The first limit field present wins; each API has its own name.
    static const char* const limit_keys[] = {"max_completion_tokens", "max_tokens", "max_output_tokens"};
    for (const char* key : limit_keys)
        if (req.max_tokens < 0 && !read_limit(root.get(key), key, req.max_tokens, false, error)) return false;
    if (const JVal* opts = root.get("options"); opts && opts->type == JVal::obj_t)
        if (!read_limit(opts->get("num_predict"), "num_predict", req.max_tokens, true, error)) return false;

    const char* required = nullptr;
    const JVal::Type required_type[2] = {JVal::arr_t, JVal::arr_t};
    int n_types = 1;
    const JVal::Type* types = required_type;
    static const JVal::Type str_or_arr[2] = {JVal::str_t, JVal::arr_t};
    switch (api) {
        case Api::chat: case Api::messages: case Api::ollama_chat: required = "messages"; break;
        case Api::completions: required = "prompt"; types = str_or_arr; n_types = 2; break;
        case Api::ollama_generate: required = "prompt"; types = str_or_arr; n_types = 1; break;
        case Api::responses: required = "input"; types = str_or_arr; n_types = 2; break;
    }
    const JVal* main = root.get(required);
    if (!main) {
        error = std::string("Missing required parameter: '") + required + "'.";
        return false;
    }
    bool type_ok = false;
    for (int i = 0; i < n_types; ++i) type_ok = type_ok || main->type == types[i];
    if (!type_ok) {
        error = std::string("Invalid type for '") + required + "': expected " +
                (n_types == 2 ? "a string or an array" : types[0] == JVal::str_t ? "a string" : "an array") + ".";
        return false;
    }
    if (api == Api::messages && req.max_tokens < 0) {
        error = "max_tokens: Field required";
        return false;
    }

    for (const char* key : {"messages", "prompt", "input", "system", "instructions"})
        if (const JVal* v = root.get(key)) sum_strings(*v, req.prompt_chars);

    if (const JVal* tools = root.get("tools"); tools && tools->type == JVal::arr_t && !tools->arr.empty()) {
        const JVal& t = tools->arr.front();
        const JVal* name = t.get("name");  // Anthropic and Responses
        if (const JVal* fn = t.get("function")) name = fn->get("name");  // Chat Completions and Ollama
        if (name && name->type == JVal::str_t) req.tool_name = name->s;
    }
    return true;
}

int64_t estimate_prompt_tokens(const ChatRequest& req) {
    int64_t t = (req.prompt_chars + 3) / 4;
    return t < 1 ? 1 : t;
}

}  // namespace pytps
