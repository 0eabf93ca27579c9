#include "emulator/truth.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "emulator/json_write.hpp"

namespace pytps {

namespace {
template <class T>
void json_array(std::string& out, const std::vector<T>& v) {
    out.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out.push_back(',');
        json_int(out, static_cast<int64_t>(v[i]));
    }
    out.push_back(']');
}
void json_doubles(std::string& out, const std::vector<double>& v) {
    out.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out.push_back(',');
        json_double(out, v[i]);
    }
    out.push_back(']');
}

// The members after an object's first: ,"key":value.
void key(std::string& out, const char* name) {
    out += ",\"";
    out += name;
    out += "\":";
}
void int_member(std::string& out, const char* name, int64_t v) {
    key(out, name);
    json_int(out, v);
}
void str_member(std::string& out, const char* name, std::string_view v) {
    key(out, name);
    json_str(out, v);
}
void bool_member(std::string& out, const char* name, bool v) {
    key(out, name);
    out += v ? "true" : "false";
}
void double_member(std::string& out, const char* name, double v) {
    key(out, name);
    json_double(out, v);
}
// An optional string: null when empty.
void str_or_null_member(std::string& out, const char* name, const std::string& v) {
    if (v.empty()) {
        key(out, name);
        out += "null";
    } else {
        str_member(out, name, v);
    }
}
// A kernel stamp: null when the kernel gave none (INT64_MIN).
void stamp_member(std::string& out, const char* name, int64_t v) {
    if (v == INT64_MIN) {
        key(out, name);
        out += "null";
    } else {
        int_member(out, name, v);
    }
}
template <class T>
void array_member(std::string& out, const char* name, const std::vector<T>& v) {
    key(out, name);
    json_array(out, v);
}
}  // namespace

std::string truth_json_line(const TruthRecord& r) {
    std::string s = "{\"seq\":";
    json_int(s, static_cast<int64_t>(r.seq));
    str_member(s, "id", r.id);
    str_member(s, "api", r.api);
    str_member(s, "path", r.path);
    int_member(s, "status", r.status);
    str_member(s, "fault", r.fault);
    bool_member(s, "stream", r.stream);
    bool_member(s, "completed", r.completed);
    bool_member(s, "client_closed", r.client_closed);
    str_or_null_member(s, "answer", r.answer);
    bool_member(s, "answer_sent", r.answer_sent);
    int_member(s, "received_ns", r.received_ns);
    stamp_member(s, "received_kernel_ns", r.received_kernel_ns);
    int_member(s, "headers_sent_ns", r.headers_sent_ns);
    int_member(s, "done_ns", r.done_ns);
    int_member(s, "admitted_ns", r.admitted_ns);
    int_member(s, "released_ns", r.released_ns);
    int_member(s, "queued_ns", r.queued_ns);
    int_member(s, "prompt_tokens", r.prompt_tokens);
    int_member(s, "inputs", r.inputs);
    int_member(s, "dimensions", r.dimensions);
    int_member(s, "results", r.results);
    int_member(s, "images", r.images);
    int_member(s, "image_tokens", r.image_tokens);
    int_member(s, "cached_tokens", r.cached_tokens);
    int_member(s, "audio_bytes_per_s", r.audio_bytes_per_s);
    if (!r.write_audio_s.empty()) {
        key(s, "write_audio_s");
        json_doubles(s, r.write_audio_s);
    }
    double_member(s, "input_audio_s", r.input_audio_s);
    str_member(s, "transcript", r.transcript);
    int_member(s, "transcript_words", r.transcript_words);
    int_member(s, "planted_errors", r.planted_errors);
    if (r.turn >= 0) {
        int_member(s, "turn", r.turn);
        s += ",\"tool_results\":[";
        for (size_t i = 0; i < r.tool_results.size(); ++i) {
            if (i) s += ",";
            s += "{\"id\":";
            json_str(s, r.tool_results[i]);
            int_member(s, "chars", r.tool_result_chars[i]);
            s += "}";
        }
        s += "],\"tool_calls\":[";
        for (size_t i = 0; i < r.tool_calls.size(); ++i) {
            const TruthToolCall& c = r.tool_calls[i];
            if (i) s += ",";
            s += "{\"id\":";
            json_str(s, c.id);
            str_member(s, "name", c.name);
            str_member(s, "arguments", c.arguments);
            bool_member(s, "valid", c.valid);
            s += "}";
        }
        s += "]";
    }
    int_member(s, "output_tokens", r.output_tokens);
    int_member(s, "reasoning_tokens", r.reasoning_tokens);
    int_member(s, "planned_events", r.planned_events);
    int_member(s, "keepalives", r.keepalives);
    array_member(s, "scheduled_ns", r.scheduled_ns);
    array_member(s, "sent_ns", r.sent_ns);
    array_member(s, "tokens", r.tokens);
    array_member(s, "kinds", r.kinds);
    array_member(s, "batch", r.batch);
    s += "}\n";
    return s;
}

void TruthStore::open_log(const std::string& path, bool keep) {
    file_ = std::fopen(path.c_str(), "w");
    if (!file_)
        throw std::runtime_error("cannot open the truth log '" + path + "' for writing: " + std::strerror(errno));
    log_path_ = path;
    log_errno_ = 0;
    keep_ = keep;
    logging_ = true;
    closing_ = false;
    writer_ = std::thread(&TruthStore::writer_main, this);
}

void TruthStore::close_log() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (!logging_) return;
        closing_ = true;
    }
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
    if (std::fclose(file_) != 0 && log_errno_ == 0) log_errno_ = errno;
    file_ = nullptr;
    logging_ = false;
}

std::string TruthStore::take_log_error() {
    if (log_errno_ == 0) return {};
    const std::string msg = "writing the truth log '" + log_path_ + "' failed: " + std::strerror(log_errno_);
    log_errno_ = 0;
    return msg;
}

void TruthStore::writer_main() {
    std::vector<TruthRecord> batch;
    for (;;) {
        bool closing;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return closing_ || !to_log_.empty(); });
            batch.swap(to_log_);
            closing = closing_;
        }
        for (const TruthRecord& r : batch) {
            std::string line = truth_json_line(r);
            if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() && log_errno_ == 0)
                log_errno_ = errno != 0 ? errno : EIO;
        }
        // Reported by Emulator::stop() (this thread cannot throw); records keep coming.
        if (!batch.empty() && std::fflush(file_) != 0 && log_errno_ == 0) log_errno_ = errno;
        batch.clear();
        if (closing) {
            std::lock_guard<std::mutex> lk(mu_);
            if (to_log_.empty()) return;
        }
    }
}

void TruthStore::publish(TruthRecord&& r) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (logging_ && keep_) {
            to_log_.push_back(r);
            kept_.push_back(std::move(r));
        } else if (logging_) {
            to_log_.push_back(std::move(r));
        } else {
            kept_.push_back(std::move(r));
        }
    }
    if (logging_) cv_.notify_one();
    added_.notify_all();
}

size_t TruthStore::wait_for(size_t n, int64_t timeout_ns) {
    std::unique_lock<std::mutex> lk(mu_);
    added_.wait_for(lk, std::chrono::nanoseconds(timeout_ns), [&] { return kept_.size() >= n; });
    return kept_.size();
}

std::vector<TruthRecord> TruthStore::snapshot(bool clear) {
    std::lock_guard<std::mutex> lk(mu_);
    if (clear) {
        std::vector<TruthRecord> out;
        out.swap(kept_);
        return out;
    }
    return kept_;
}

size_t TruthStore::size() {
    std::lock_guard<std::mutex> lk(mu_);
    return kept_.size();
}

}  // namespace pytps
