#include "emulator/formats.hpp"

#include <cstdio>
#include <ctime>

#include "emulator/json_write.hpp"

namespace pytps {

namespace {
// Short, varied, pure-ASCII pieces: clients that count characters or words see a plausible
// text, and no piece needs escaping.
const char* const kWords[] = {"the",   "token", "stream", "moves", "at",    "a",    "steady", "pace",
                              "while", "each",  "word",   "lands", "right", "on",   "its",    "time"};
constexpr int64_t kNumWords = 16;
}  // namespace

std::string token_piece(TokKind kind, int64_t i, int64_t n) {
    if (kind == TokKind::tool) {
        if (n == 1) return "{}";
        if (i == 0) return "{\"q\": \"";
        if (i == n - 1) return "\"}";
        return std::string(kWords[i % kNumWords]) + " ";
    }
    const int64_t shift = kind == TokKind::reasoning ? 5 : 0;
    return std::string(" ") + kWords[(i + shift) % kNumWords];
}

std::string answer_piece(const std::string& answer) { return "\nAnswer: " + answer; }

std::string Formatter::piece(TokKind kind, int64_t i, int64_t n) const {
    if (kind == TokKind::content && !answer_.empty() && i == n - 1) return answer_piece(answer_);
    return token_piece(kind, i, n);
}

std::unique_ptr<Formatter> Formatter::make(const ResponsePlan& plan) {
    switch (plan.api.dialect) {
        case Dialect::OpenAIChat: return make_openai_chat(plan);
        case Dialect::OpenAICompletions: return make_openai_completions(plan);
        case Dialect::OpenAIResponses: return make_responses(plan);
        case Dialect::Anthropic: return make_anthropic(plan);
        case Dialect::Ollama: return make_ollama(plan);
        case Dialect::Json: break;  // never a generation route
        case Dialect::SpeechPcm:
        case Dialect::SpeechWav:
        case Dialect::SpeechSse:
        case Dialect::SpeechCoded:
        case Dialect::Transcription: break;  // made by their route (audio_route.cpp)
    }
    return nullptr;
}

bool Formatter::is_sse() const { return dialect_uses_sse(p_.api.dialect); }

void Formatter::openai_head(std::string& out, const char* object, bool model) const {
    out += "{\"id\":";
    json_str(out, p_.id);
    out += ",\"object\":\"";
    out += object;
    out += "\",\"created\":";
    json_int(out, p_.created_s);
    if (model) {
        out += ",\"model\":";
        json_str(out, p_.model);
    }
}

const char* Formatter::stream_content_type() const {
    if (p_.api.dialect == Dialect::SpeechPcm) return "audio/pcm";
    if (p_.api.dialect == Dialect::SpeechWav) return "audio/wav";
    return is_sse() ? "text/event-stream; charset=utf-8" : "application/x-ndjson";
}

void Formatter::keepalive(std::string& out) {
    if (is_sse()) out += ": keep-alive\n\n";
}

std::string Formatter::next_text(TokKind kind, int64_t count) {
    const int k = static_cast<int>(kind);
    const int64_t n = kind == TokKind::reasoning ? p_.reasoning_tokens : p_.answer_tokens;
    std::string s;
    for (int64_t j = 0; j < count; ++j) s += piece(kind, emitted_[k] + j, n);
    emitted_[k] += count;
    if (keep_text_) acc_[k] += s;
    return s;
}

std::vector<Formatter::ToolRun> Formatter::next_tool(int64_t count) {
    std::vector<ToolRun> runs;
    for (int64_t j = 0; j < count && tool_call_ < p_.calls.size(); ++j) {
        const PlannedCall& c = p_.calls[tool_call_];
        if (runs.empty() || runs.back().call != tool_call_) runs.push_back(ToolRun{tool_call_, tool_piece_ == 0, {}});
        runs.back().text += c.piece(tool_piece_);
        if (++tool_piece_ == c.pieces()) {
            ++tool_call_;
            tool_piece_ = 0;
        }
    }
    emitted_[2] += count;
    return runs;
}

bool BlockFormatter::enter_block(std::string& out, int k, size_t call, bool starts) {
    if (open_ == k && !starts) return false;
    leave_block(out);
    open_ = k;
    call_ = call;
    open_block(out);
    return true;
}

void BlockFormatter::leave_block(std::string& out) {
    if (open_ < 0) return;
    close_block(out);
    open_ = -1;
}

std::string Formatter::whole_text(TokKind kind, int64_t n) const {
    std::string s;
    for (int64_t j = 0; j < n; ++j) s += piece(kind, j, n);
    return s;
}

const char* Formatter::openai_finish() const {
    if (p_.hit_limit) return "length";
    return p_.tool_call ? "tool_calls" : "stop";
}

ErrorFamily error_family(std::string_view path) {
    const ApiPath* api = find_api_path(path);
    if (api && api->dialect == Dialect::Anthropic) return ErrorFamily::anthropic;
    if (path.substr(0, 5) == "/api/") return ErrorFamily::ollama;
    return ErrorFamily::openai;
}

std::string error_body(ErrorFamily fam, int status, std::string_view message) {
    std::string out;
    if (fam == ErrorFamily::ollama) {
        out = "{\"error\":";
        json_str(out, message);
        out += "}";
        return out;
    }
    if (fam == ErrorFamily::anthropic) {
        const char* type = status == 400 ? "invalid_request_error"
                           : status == 404 ? "not_found_error"
                           : status == 429 ? "rate_limit_error"
                           : status == 503 ? "overloaded_error"
                                           : "api_error";
        out = "{\"type\":\"error\",\"error\":{\"type\":\"";
        out += type;
        out += "\",\"message\":";
        json_str(out, message);
        out += "}}";
        return out;
    }
    const char* type = status == 429 ? "requests" : status >= 500 ? "server_error" : "invalid_request_error";
    const char* code = status == 429 ? "\"rate_limit_exceeded\"" : status == 404 ? "\"unknown_url\"" : "null";
    out = "{\"error\":{\"message\":";
    json_str(out, message);
    out += ",\"type\":\"";
    out += type;
    out += "\",\"param\":null,\"code\":";
    out += code;
    out += "}}";
    return out;
}

std::string rfc3339_now() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tm t;
    gmtime_r(&ts.tv_sec, &t);
    char buf[48];
    int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", t.tm_year + 1900, t.tm_mon + 1,
                          t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, static_cast<long>(ts.tv_nsec));
    return std::string(buf, static_cast<size_t>(n));
}

}  // namespace pytps
