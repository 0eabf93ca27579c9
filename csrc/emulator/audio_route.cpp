// The audio routes: text to speech (/v1/audio/speech) and speech to text
// (/v1/audio/transcriptions), planned as streams of events on the load model as generation is,
// so faults (a stall after N writes), the queue and the truth record work the same way.
//
// Speech: the input's words make speech_words_per_s words per second of 16-bit mono PCM at
// speech_sample_rate; it goes out in chunks of speech_chunk_ms of audio, the first due at TTFT and
// each next one the chunk's duration x speech_rtf later (RTF 0.5: twice as fast as playback).
// Raw PCM, WAV (a streaming header, data size 0xFFFFFFFF), or SSE speech.audio.delta events.
// A compressed response_format (mp3, opus, aac, flac) is answered with the clip the emulator was
// given for it (EmulatorConfig::speech_clips, encoded by Python), whole, whatever the input: in
// chunks of speech_chunk_ms at the clip's average byte rate, paced the same way.
// Truth: tokens[i] is the audio bytes of write i, write_audio_s[i] its audio seconds.
//
// Transcription: a multipart upload of a WAV file; its transcript is the book's (by the FNV-1a
// hash of the file's bytes) or seeded words, 2.5 per second of audio, with round(n x
// stt_word_error_rate) of them, at seeded places, replaced by a word no reference has. The
// words stream over the processing time (audio seconds / stt_rtfx) after TTFT, in OpenAI's
// transcript.text.delta/done events or vLLM's chat-style chunks; non-streamed: one JSON body.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <numeric>

#include "core/audio_body.hpp"
#include "core/clock.hpp"
#include "core/json_scan.hpp"
#include "emulator/json_write.hpp"
#include "emulator/schedule.hpp"
#include "emulator/server.hpp"

namespace pytps {

namespace {

constexpr const char* kPlantedWord = "xerrorx";  // never a word of a reference transcript

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_append(std::string& out, const std::string& bytes) {
    size_t i = 0;
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = u[i] << 16 | u[i + 1] << 8 | u[i + 2];
        out += kB64[v >> 18];
        out += kB64[(v >> 12) & 63];
        out += kB64[(v >> 6) & 63];
        out += kB64[v & 63];
    }
    if (i + 1 == bytes.size()) {
        const uint32_t v = u[i] << 16;
        out += kB64[v >> 18];
        out += kB64[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == bytes.size()) {
        const uint32_t v = u[i] << 16 | u[i + 1] << 8;
        out += kB64[v >> 18];
        out += kB64[(v >> 12) & 63];
        out += kB64[(v >> 6) & 63];
        out += '=';
    }
}

void le32(std::string& out, uint32_t v) {
    for (int k = 0; k < 4; ++k) out += static_cast<char>((v >> (8 * k)) & 0xFF);
}
void le16(std::string& out, uint16_t v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>(v >> 8);
}

// A quiet 440 Hz-ish sawtooth, so the audio is not silence; sample k of the stream.
int16_t sample_at(int64_t k) { return static_cast<int16_t>((k * 440 * 2 % 24000) - 12000) / 8; }

const char* coded_content_type(const std::string& format) {
    if (format == "mp3") return "audio/mpeg";
    if (format == "opus") return "audio/ogg";
    if (format == "aac") return "audio/aac";
    if (format == "flac") return "audio/flac";
    return "application/octet-stream";
}

class SpeechFormatter : public Formatter {
public:
    // clip: a compressed format's clip, written slice by slice (null: PCM made here).
    SpeechFormatter(const ResponsePlan& plan, int64_t sample_rate, int64_t input_tokens,
                    const EmulatorConfig::CodedClip* clip = nullptr, const char* content_type = nullptr)
        : Formatter(plan), rate_(sample_rate), input_tokens_(input_tokens), clip_(clip), content_type_(content_type) {}

    const char* stream_content_type() const override {
        return clip_ ? content_type_ : Formatter::stream_content_type();
    }

    void begin(std::string& out) override {
        if (p_.api.dialect != Dialect::SpeechWav) return;
        out += "RIFF";
        le32(out, 0xFFFFFFFFu);
        out += "WAVEfmt ";
        le32(out, 16);
        le16(out, 1);  // PCM
        le16(out, 1);  // mono
        le32(out, static_cast<uint32_t>(rate_));
        le32(out, static_cast<uint32_t>(rate_ * 2));
        le16(out, 2);
        le16(out, 16);
        out += "data";
        le32(out, 0xFFFFFFFFu);
    }
    void tokens(std::string& out, TokKind, int64_t bytes) override {
        if (clip_) {
            const size_t n = std::min(static_cast<size_t>(bytes), clip_->bytes.size() - std::min(clip_->bytes.size(), offset_));
            out.append(clip_->bytes, offset_, n);
            offset_ += n;
            emitted_[static_cast<int>(TokKind::content)] += bytes;
            return;
        }
        std::string& pcm = pcm_;
        pcm.clear();
        for (int64_t b = 0; b < bytes; b += 2) {
            const int16_t v = sample_at(samples_++);
            pcm += static_cast<char>(v & 0xFF);
            if (b + 1 < bytes) pcm += static_cast<char>((v >> 8) & 0xFF);
        }
        emitted_[static_cast<int>(TokKind::content)] += bytes;
        if (p_.api.dialect != Dialect::SpeechSse) {
            out += pcm;
            return;
        }
        out += "data: {\"type\":\"speech.audio.delta\",\"audio\":\"";
        base64_append(out, pcm);
        out += "\"}\n\n";
    }
    void finish(std::string& out, const StreamTimes&) override {
        if (p_.api.dialect != Dialect::SpeechSse) return;
        out += "data: {\"type\":\"speech.audio.done\",\"usage\":{\"input_tokens\":";
        json_int(out, input_tokens_);
        out += ",\"output_tokens\":";
        json_int(out, samples_ / 100);
        out += ",\"total_tokens\":";
        json_int(out, input_tokens_ + samples_ / 100);
        out += "}}\n\n";
    }
    void error_event(std::string& out) override {
        if (p_.api.dialect == Dialect::SpeechSse)
            out += "data: {\"type\":\"error\",\"error\":{\"message\":\"The server had an error while generating audio.\"}}\n\n";
    }
    void malformed_event(std::string& out) override {
        if (p_.api.dialect == Dialect::SpeechSse) out += "data: {\"type\":\"speech.audio.delta\",\"audio\":\"AA\n\n";
    }
    void full_body(std::string&, const StreamTimes&) override {}

private:
    int64_t rate_;
    int64_t input_tokens_;
    int64_t samples_ = 0;
    std::string pcm_;
    const EmulatorConfig::CodedClip* clip_;
    const char* content_type_;
    size_t offset_ = 0;
};

class TranscriptionFormatter : public Formatter {
public:
    TranscriptionFormatter(const ResponsePlan& plan, std::vector<std::string> words, bool vllm, double audio_s)
        : Formatter(plan), words_(std::move(words)), vllm_(vllm), audio_s_(audio_s) {}

    void begin(std::string&) override {}
    void tokens(std::string& out, TokKind, int64_t count) override {
        std::string piece;
        for (int64_t i = 0; i < count && next_ < words_.size(); ++i, ++next_) {
            if (next_ > 0) piece += ' ';
            piece += words_[next_];
        }
        emitted_[static_cast<int>(TokKind::content)] += count;
        if (vllm_) {
            out += "data: ";
            openai_head(out, "transcription.chunk", true);
            out += ",\"choices\":[{\"index\":0,\"delta\":{\"content\":";
            json_str(out, piece);
            out += "},\"finish_reason\":null}]}\n\n";
        } else {
            out += "data: {\"type\":\"transcript.text.delta\",\"delta\":";
            json_str(out, piece);
            out += "}\n\n";
        }
    }
    void finish(std::string& out, const StreamTimes&) override {
        if (vllm_) {
            out += "data: ";
            openai_head(out, "transcription.chunk", true);
            out += ",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":";
            openai_usage(out, p_.prompt_tokens, -1, static_cast<int64_t>(words_.size()), 0);
            out += "}\n\ndata: [DONE]\n\n";
        } else {
            out += "data: {\"type\":\"transcript.text.done\",\"text\":";
            json_str(out, text());
            out += ",\"usage\":{\"type\":\"tokens\",\"input_tokens\":";
            json_int(out, p_.prompt_tokens);
            out += ",\"output_tokens\":";
            json_int(out, static_cast<int64_t>(words_.size()));
            out += ",\"total_tokens\":";
            json_int(out, p_.prompt_tokens + static_cast<int64_t>(words_.size()));
            out += "}}\n\n";
        }
    }
    void error_event(std::string& out) override {
        out += "data: {\"type\":\"error\",\"error\":{\"message\":\"The server had an error while transcribing.\"}}\n\n";
    }
    void malformed_event(std::string& out) override { out += "data: {\"type\":\"transcript.text.delta\",\"delta\":\"\n\n"; }
    void full_body(std::string& out, const StreamTimes&) override {
        out += "{\"text\":";
        json_str(out, text());
        out += ",\"usage\":{\"type\":\"duration\",\"seconds\":";
        json_double(out, audio_s_);
        out += "}}";
    }

private:
    std::string text() const {
        std::string t;
        for (size_t i = 0; i < words_.size(); ++i) {
            if (i) t += ' ';
            t += words_[i];
        }
        return t;
    }
    std::vector<std::string> words_;
    bool vllm_;
    double audio_s_;
    size_t next_ = 0;
};

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> out;
    std::string w;
    for (const char c : text) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (!w.empty()) out.push_back(std::move(w));
            w.clear();
        } else {
            w += c;
        }
    }
    if (!w.empty()) out.push_back(std::move(w));
    return out;
}

struct SpeechRequest {
    std::string model, input, response_format = "pcm", stream_format = "audio";
};

bool parse_speech(std::string_view body, const EmulatorConfig& cfg, SpeechRequest& out, std::string& err) {
    json::JsonReader j(body);
    if (!j.begin_object()) {
        err = "the request body must be a JSON object";
        return false;
    }
    std::string_view key;
    while (j.next_key(key)) {
        std::string* dest = key == "model" ? &out.model
                            : key == "input" ? &out.input
                            : key == "response_format" ? &out.response_format
                            : key == "stream_format" ? &out.stream_format
                                                      : nullptr;
        if (dest && j.peek() == json::Type::String) {
            dest->clear();
            j.read_string(*dest);
        } else {
            j.skip_value();
        }
    }
    if (!j.finish()) {
        err = std::string("malformed JSON: ") + j.error();
        return false;
    }
    if (out.input.empty()) {
        err = "'input' is required: the text to speak";
        return false;
    }
    if (out.response_format != "pcm" && out.response_format != "wav" && !cfg.speech_clips.count(out.response_format)) {
        err = "response_format '" + out.response_format +
              "': the emulator speaks pcm and wav, and a compressed format it was given a clip of (speech_clips)";
        return false;
    }
    if (out.stream_format != "audio" && out.stream_format != "sse") {
        err = "stream_format must be 'audio' or 'sse'";
        return false;
    }
    if (out.stream_format == "sse" && out.response_format != "pcm") {
        err = "stream_format 'sse' carries pcm audio in the emulator: use response_format 'pcm'";
        return false;
    }
    return true;
}

struct Upload {
    std::string file, model, response_format = "json";
    bool stream = false;
};

// A multipart/form-data body: the delimiter is its first line (clients send no preamble).
bool parse_multipart(std::string_view body, Upload& out, std::string& err) {
    const size_t eol = body.find("\r\n");
    if (body.size() < 4 || body.substr(0, 2) != "--" || eol == std::string_view::npos) {
        err = "the request body must be multipart/form-data";
        return false;
    }
    const std::string delim = "\r\n" + std::string(body.substr(0, eol));
    size_t pos = eol + 2;
    bool have_file = false;
    while (pos < body.size()) {
        const size_t head_end = body.find("\r\n\r\n", pos);
        if (head_end == std::string_view::npos) break;
        const std::string_view head = body.substr(pos, head_end - pos);
        const size_t data_begin = head_end + 4;
        const size_t next = body.find(delim, data_begin);
        if (next == std::string_view::npos) {
            err = "a multipart part has no closing delimiter";
            return false;
        }
        const std::string_view value = body.substr(data_begin, next - data_begin);
        const size_t np = head.find("name=\"");
        std::string name;
        if (np != std::string_view::npos) {
            const size_t q = head.find('"', np + 6);
            name = std::string(head.substr(np + 6, q - np - 6));
        }
        if (name == "file") {
            out.file.assign(value.data(), value.size());
            have_file = true;
        } else if (name == "model") {
            out.model.assign(value.data(), value.size());
        } else if (name == "stream") {
            out.stream = value == "true" || value == "True" || value == "1";
        } else if (name == "response_format") {
            out.response_format.assign(value.data(), value.size());
        }
        pos = next + delim.size();
        if (body.substr(pos, 2) == "--") break;
        pos += 2;  // CRLF after the delimiter
    }
    if (!have_file) {
        err = "the upload has no 'file' part: send the audio as multipart field 'file'";
        return false;
    }
    return true;
}

}  // namespace

void Server::start_audio(Conn& c, const AudioApiPath& api, HttpRequest& req, int64_t received_ns) {
    const bool speech = api.api == AudioApi::Speech;
    auto s = open_stream(c, req, received_ns, speech ? "speech-" : "trsc-", speech ? "speech" : "transcriptions");
    TruthRecord& rec = s->rec;
    const uint64_t seq = rec.seq;
    const std::string id_header = "x-request-id: " + rec.id + "\r\n";
    std::string err;
    ResponsePlan& p = s->plan;
    p.seq = seq;
    p.draw = seq;
    p.id = rec.id;
    p.created_s = static_cast<int64_t>(std::time(nullptr));
    std::mt19937_64 rng = request_rng(cfg_.seed, seq);
    const int64_t ttft = draw_ns(cfg_.ttft_dist, cfg_.ttft_ns, cfg_.ttft_sd_ns, rng);
    LoadState& load = s->load;
    load.seq = seq;
    load.conn_id = c.id;
    const FaultSpec* fault = nullptr;

    if (speech) {
        SpeechRequest sr;
        if (!parse_speech(req.body, cfg_, sr, err)) {
            reject(c, req, std::move(rec), id_header, error_body(ErrorFamily::openai, 400, err));
            return;
        }
        const auto clip_it = cfg_.speech_clips.find(sr.response_format);
        const EmulatorConfig::CodedClip* clip = clip_it == cfg_.speech_clips.end() ? nullptr : &clip_it->second;
        const Dialect d = sr.stream_format == "sse"          ? Dialect::SpeechSse
                          : clip != nullptr                  ? Dialect::SpeechCoded
                          : sr.response_format == "wav"      ? Dialect::SpeechWav
                                                              : Dialect::SpeechPcm;
        const int64_t words = std::max<int64_t>(1, static_cast<int64_t>(split_words(sr.input).size()));
        rec.prompt_tokens = words;
        rec.stream = true;
        if (refuse_by_fault(c, req, *s, id_header, ErrorFamily::openai, false, fault)) return;
        p.api = ApiPath{api.path, d, true};
        p.model = sr.model.empty() ? cfg_.model : sr.model;
        p.stream = true;
        p.prompt_tokens = words;
        const int64_t rate = cfg_.speech_sample_rate;
        // The stream's bytes and bytes per second of audio: PCM's made here (16-bit mono), or
        // the clip's, whose byte rate is its average (a codec's frames vary; the total is exact).
        int64_t total = 0, chunk = 0;
        double bytes_per_s = 0.0;
        if (clip != nullptr) {
            total = static_cast<int64_t>(clip->bytes.size());
            bytes_per_s = static_cast<double>(total) / clip->seconds;
            chunk = std::max<int64_t>(1, std::llround(cfg_.speech_chunk_ms / 1000.0 * bytes_per_s));
        } else {
            const int64_t samples =
                std::max<int64_t>(1, std::llround(static_cast<double>(words) / cfg_.speech_words_per_s * rate));
            total = samples * 2;
            bytes_per_s = static_cast<double>(rate * 2);
            chunk = std::max<int64_t>(2, std::llround(cfg_.speech_chunk_ms / 1000.0 * rate) * 2);
        }
        const size_t ne = static_cast<size_t>((total + chunk - 1) / chunk);
        s->events.resize(ne);
        load.gap_ns.resize(ne);
        rec.write_audio_s.resize(ne);
        for (size_t i = 0; i < ne; ++i) {
            const int64_t bytes = std::min<int64_t>(chunk, total - static_cast<int64_t>(i) * chunk);
            s->events[i] = TokenEvent{0, static_cast<int32_t>(bytes), TokKind::content};
            rec.write_audio_s[i] = static_cast<double>(bytes) / bytes_per_s;
            load.gap_ns[i] = i == 0 ? ttft : std::llround(rec.write_audio_s[i] * 1e9 * cfg_.speech_rtf);
        }
        rec.audio_bytes_per_s = std::llround(bytes_per_s);
        s->fmt = clip != nullptr ? std::make_unique<SpeechFormatter>(p, rate, words, clip, coded_content_type(sr.response_format))
                                 : std::make_unique<SpeechFormatter>(p, rate, words);
    } else {
        Upload up;
        if (!parse_multipart(req.body, up, err)) {
            reject(c, req, std::move(rec), id_header, error_body(ErrorFamily::openai, 400, err));
            return;
        }
        AudioBodyScanner wav(true);
        const size_t data_bytes = wav.feed(up.file.data(), up.file.size());
        const AudioFormat& f = wav.format();
        if (wav.error() || !wav.in_samples() || f.sample_rate <= 0 || f.channels <= 0 || f.bits_per_sample <= 0) {
            reject(c, req, std::move(rec), id_header,
                   error_body(ErrorFamily::openai, 400, std::string("the emulator transcribes WAV files: ") +
                                                            (wav.error() ? wav.error() : "no audio data in the file")));
            return;
        }
        const double audio_s = static_cast<double>(data_bytes) /
                               static_cast<double>(f.sample_rate * f.channels * (f.bits_per_sample / 8));
        rec.input_audio_s = audio_s;
        rec.stream = up.stream;
        const uint64_t hash = audio_key(up.file);
        std::vector<std::string> words;
        if (auto it = cfg_.transcripts.find(hash); it != cfg_.transcripts.end()) {
            words = split_words(it->second);
        } else {
            const int64_t n = std::max<int64_t>(1, std::llround(audio_s * 2.5));
            for (int64_t i = 0; i < n; ++i) words.push_back(token_piece(TokKind::content, i, n).substr(1));
        }
        // Planted errors: round(n x rate) words, at places drawn from the file's own hash, so a
        // file gets the same transcript whatever the order of the requests.
        std::mt19937_64 err_rng = request_rng(cfg_.seed, hash);
        std::vector<size_t> order(words.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::shuffle(order.begin(), order.end(), err_rng);
        const size_t planted = static_cast<size_t>(std::llround(static_cast<double>(words.size()) * cfg_.stt_word_error_rate));
        for (size_t k = 0; k < planted && k < order.size(); ++k) words[order[k]] = kPlantedWord;
        rec.planted_errors = static_cast<int64_t>(std::min(planted, order.size()));
        rec.transcript_words = static_cast<int64_t>(words.size());
        for (size_t i = 0; i < words.size(); ++i) rec.transcript += (i ? " " : "") + words[i];
        rec.prompt_tokens = std::llround(audio_s * 50);  // as Whisper: 50 audio frames per second
        if (refuse_by_fault(c, req, *s, id_header, ErrorFamily::openai, !up.stream, fault)) return;
        p.api = ApiPath{api.path, Dialect::Transcription, true};
        p.model = up.model.empty() ? cfg_.model : up.model;
        p.stream = up.stream;
        p.prompt_tokens = rec.prompt_tokens;
        const int64_t proc_ns = std::llround(audio_s / cfg_.stt_rtfx * 1e9);
        const int64_t per = std::max(1, cfg_.stt_words_per_event);
        const size_t ne = up.stream ? static_cast<size_t>((static_cast<int64_t>(words.size()) + per - 1) / per) : 1;
        s->events.resize(ne);
        load.gap_ns.resize(ne);
        for (size_t i = 0; i < ne; ++i) {
            const int64_t count = up.stream ? std::min<int64_t>(per, static_cast<int64_t>(words.size()) - static_cast<int64_t>(i) * per)
                                            : static_cast<int64_t>(words.size());
            s->events[i] = TokenEvent{0, static_cast<int32_t>(count), TokKind::content};
            const int64_t share = proc_ns / static_cast<int64_t>(ne);
            load.gap_ns[i] = i == 0 ? ttft + share : share;
        }
        s->fmt = std::make_unique<TranscriptionFormatter>(p, std::move(words), cfg_.stt_vllm_shape, audio_s);
    }
    place_fault(*s, fault);
    const size_t n_ev = s->events.size();
    rec.tokens.resize(n_ev);
    rec.kinds.assign(n_ev, 0);
    for (size_t i = 0; i < n_ev; ++i) rec.tokens[i] = s->events[i].tokens;
    rec.sent_ns.assign(n_ev, 0);
    rec.planned_events = static_cast<int64_t>(n_ev);
    load.planned = s->events.size();
    launch(c, req, std::move(s), received_ns);
}

}  // namespace pytps
