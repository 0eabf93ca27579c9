#include "emulator/truth.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

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
}  // namespace

std::string truth_json_line(const TruthRecord& r) {
    std::string s = "{\"seq\":";
    json_int(s, static_cast<int64_t>(r.seq));
    s += ",\"id\":";
    json_str(s, r.id);
    s += ",\"api\":";
    json_str(s, r.api);
    s += ",\"path\":";
    json_str(s, r.path);
    s += ",\"status\":";
    json_int(s, r.status);
    s += ",\"fault\":";
    json_str(s, r.fault);
    s += r.stream ? ",\"stream\":true" : ",\"stream\":false";
    s += r.completed ? ",\"completed\":true" : ",\"completed\":false";
    s += r.client_closed ? ",\"client_closed\":true" : ",\"client_closed\":false";
    s += ",\"answer\":";
    if (r.answer.empty()) {
        s += "null";
    } else {
        json_str(s, r.answer);
    }
    s += r.answer_sent ? ",\"answer_sent\":true" : ",\"answer_sent\":false";
    s += ",\"received_ns\":";
    json_int(s, r.received_ns);
    s += ",\"received_kernel_ns\":";
    if (r.received_kernel_ns == INT64_MIN) {
        s += "null";
    } else {
        json_int(s, r.received_kernel_ns);
    }
    s += ",\"headers_sent_ns\":";
    json_int(s, r.headers_sent_ns);
    s += ",\"done_ns\":";
    json_int(s, r.done_ns);
    s += ",\"admitted_ns\":";
    json_int(s, r.admitted_ns);
    s += ",\"released_ns\":";
    json_int(s, r.released_ns);
    s += ",\"queued_ns\":";
    json_int(s, r.queued_ns);
    s += ",\"prompt_tokens\":";
    json_int(s, r.prompt_tokens);
    s += ",\"inputs\":";
    json_int(s, r.inputs);
    s += ",\"dimensions\":";
    json_int(s, r.dimensions);
    s += ",\"results\":";
    json_int(s, r.results);
    s += ",\"images\":";
    json_int(s, r.images);
    s += ",\"image_tokens\":";
    json_int(s, r.image_tokens);
    s += ",\"cached_tokens\":";
    json_int(s, r.cached_tokens);
    s += ",\"audio_bytes_per_s\":";
    json_int(s, r.audio_bytes_per_s);
    if (!r.write_audio_s.empty()) {
        s += ",\"write_audio_s\":";
        json_doubles(s, r.write_audio_s);
    }
    s += ",\"input_audio_s\":";
    json_double(s, r.input_audio_s);
    s += ",\"transcript\":";
    json_str(s, r.transcript);
    s += ",\"transcript_words\":";
    json_int(s, r.transcript_words);
    s += ",\"planted_errors\":";
    json_int(s, r.planted_errors);
    if (r.turn >= 0) {
        s += ",\"turn\":";
        json_int(s, r.turn);
        s += ",\"tool_results\":[";
        for (size_t i = 0; i < r.tool_results.size(); ++i) {
            if (i) s += ",";
            s += "{\"id\":";
            json_str(s, r.tool_results[i]);
            s += ",\"chars\":";
            json_int(s, r.tool_result_chars[i]);
            s += "}";
        }
        s += "],\"tool_calls\":[";
        for (size_t i = 0; i < r.tool_calls.size(); ++i) {
            const TruthToolCall& c = r.tool_calls[i];
            if (i) s += ",";
            s += "{\"id\":";
            json_str(s, c.id);
            s += ",\"name\":";
            json_str(s, c.name);
            s += ",\"arguments\":";
            json_str(s, c.arguments);
            s += c.valid ? ",\"valid\":true}" : ",\"valid\":false}";
        }
        s += "]";
    }
    s += ",\"output_tokens\":";
    json_int(s, r.output_tokens);
    s += ",\"reasoning_tokens\":";
    json_int(s, r.reasoning_tokens);
    s += ",\"planned_events\":";
    json_int(s, r.planned_events);
    s += ",\"keepalives\":";
    json_int(s, r.keepalives);
    s += ",\"scheduled_ns\":";
    json_array(s, r.scheduled_ns);
    s += ",\"sent_ns\":";
    json_array(s, r.sent_ns);
    s += ",\"tokens\":";
    json_array(s, r.tokens);
    s += ",\"kinds\":";
    json_array(s, r.kinds);
    s += ",\"batch\":";
    json_array(s, r.batch);
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
