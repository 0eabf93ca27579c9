#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "bindings/register.hpp"
#include "emulator/emulator.hpp"

namespace pytps_bindings {

namespace {

using pytps::Dist;
using pytps::EmulatorConfig;

[[noreturn]] void bad(const std::string& msg) { throw py::value_error(msg); }

Dist dist_from(const std::string& name, const char* key, bool allow_replay) {
    if (name == "fixed") return Dist::fixed;
    if (name == "normal") return Dist::normal;
    if (name == "lognormal") return Dist::lognormal;
    if (name == "replay" && allow_replay) return Dist::replay;
    bad(std::string(key) + " must be 'fixed', 'normal', 'lognormal'" + (allow_replay ? " or 'replay'" : "") +
        ", not '" + name + "'");
}

// Builds the config from the dict pytps.Emulator prepares (already validated there; the
// checks here keep the compiled class safe on its own).
EmulatorConfig config_from(const py::dict& d) {
    EmulatorConfig c;
    for (auto item : d) {
        const std::string k = py::str(item.first);
        py::handle v = item.second;
        if (k == "host") c.host = v.cast<std::string>();
        else if (k == "port") c.port = v.cast<int>();
        else if (k == "ttft_ns") c.ttft_ns = v.cast<int64_t>();
        else if (k == "ttft_sd_ns") c.ttft_sd_ns = v.cast<int64_t>();
        else if (k == "ttft_ramp_ns_per_s") c.ttft_ramp_ns_per_s = v.cast<int64_t>();
        else if (k == "usage_overbill") c.usage_overbill = v.cast<double>();
        else if (k == "ttft_dist") c.ttft_dist = dist_from(v.cast<std::string>(), "ttft_dist", false);
        else if (k == "itl_ns") c.itl_ns = v.cast<int64_t>();
        else if (k == "itl_sd_ns") c.itl_sd_ns = v.cast<int64_t>();
        else if (k == "itl_dist") c.itl_dist = dist_from(v.cast<std::string>(), "itl_dist", true);
        else if (k == "itl_replay_ns") c.itl_replay_ns = v.cast<std::vector<int64_t>>();
        else if (k == "prefill_ns_per_token") c.prefill_ns_per_token = v.cast<int64_t>();
        else if (k == "embed_ns") c.embed_ns = v.cast<int64_t>();
        else if (k == "embed_ns_per_token") c.embed_ns_per_token = v.cast<int64_t>();
        else if (k == "embedding_dim") c.embedding_dim = v.cast<int64_t>();
        else if (k == "prefix_cache_tokens") c.prefix_cache_tokens = v.cast<int64_t>();
        else if (k == "prefix_cache_block_tokens") c.prefix_cache_block_tokens = v.cast<int64_t>();
        else if (k == "max_batch") c.max_batch = v.cast<int64_t>();
        else if (k == "batch_slowdown") c.batch_slowdown = v.cast<double>();
        else if (k == "power_idle_w") c.power_idle_w = v.cast<double>();
        else if (k == "power_per_stream_w") c.power_per_stream_w = v.cast<double>();
        else if (k == "tokens_per_event") c.tokens_per_event = v.cast<int>();
        else if (k == "coalesce") c.coalesce = v.cast<int>();
        else if (k == "reasoning_tokens") c.reasoning_tokens = v.cast<int>();
        else if (k == "tool_calls") c.tool_calls = v.cast<bool>();
        else if (k == "agent_turns") c.agent.turns = v.cast<int64_t>();
        else if (k == "agent_calls") c.agent.calls = v.cast<int64_t>();
        else if (k == "agent_invalid") c.agent.invalid = v.cast<double>();
        else if (k == "keepalive_ns") c.keepalive_ns = v.cast<int64_t>();
        else if (k == "max_output_tokens") c.max_output_tokens = v.cast<int>();
        else if (k == "default_output_tokens") c.default_output_tokens = v.cast<int>();
        else if (k == "model") c.model = v.cast<std::string>();
        else if (k == "seed") c.seed = v.cast<uint64_t>();
        else if (k == "draws_by_prompt") c.draws_by_prompt = v.cast<bool>();
        else if (k == "spin_ns") c.spin_ns = v.cast<int64_t>();
        else if (k == "realtime") c.realtime = v.cast<bool>();
        else if (k == "truth_log") c.truth_log = v.cast<std::string>();
        else if (k == "keep_truth") c.keep_truth = v.cast<bool>();
        else if (k == "answer_accuracy") c.answers.accuracy = v.cast<double>();
        else if (k == "speech_sample_rate") c.speech_sample_rate = v.cast<int64_t>();
        else if (k == "speech_words_per_s") c.speech_words_per_s = v.cast<double>();
        else if (k == "speech_chunk_ms") c.speech_chunk_ms = v.cast<double>();
        else if (k == "speech_rtf") c.speech_rtf = v.cast<double>();
        else if (k == "stt_rtfx") c.stt_rtfx = v.cast<double>();
        else if (k == "stt_word_error_rate") c.stt_word_error_rate = v.cast<double>();
        else if (k == "stt_words_per_event") c.stt_words_per_event = v.cast<int>();
        else if (k == "stt_vllm_shape") c.stt_vllm_shape = v.cast<bool>();
        else if (k == "transcripts") {
            // {audio file bytes: transcript}, kept by the file's key.
            for (auto t : v.cast<py::dict>())
                c.transcripts[pytps::audio_key(t.first.cast<std::string>())] = t.second.cast<std::string>();
        }
        else if (k == "speech_clips") {
            // {response_format: (clip bytes, its audio seconds)}
            for (auto t : v.cast<py::dict>()) {
                auto clip = t.second.cast<std::pair<std::string, double>>();
                if (clip.first.empty() || !(clip.second > 0.0))
                    throw py::value_error("speech_clips: each clip needs bytes and its audio seconds > 0");
                c.speech_clips[t.first.cast<std::string>()] = pytps::EmulatorConfig::CodedClip{clip.first, clip.second};
            }
        }
        else if (k == "answer_accuracy_drop") c.answers.accuracy_drop = v.cast<double>();
        else if (k == "answers") {
            // {prompt's last text: (right, wrong)}
            for (auto a : v.cast<py::dict>()) {
                auto pair = a.second.cast<std::pair<std::string, std::string>>();
                c.answers.by_prompt[a.first.cast<std::string>()] = pytps::AnswerKey{pair.first, pair.second};
            }
        } else if (k == "faults") {
            for (auto f : v.cast<py::list>()) {
                py::dict fd = f.cast<py::dict>();
                pytps::FaultSpec s;
                for (auto fi : fd) {
                    const std::string fk = py::str(fi.first);
                    if (fk == "kind") {
                        const std::string name = fi.second.cast<std::string>();
                        s.kind = pytps::fault_from_name(name);
                        if (s.kind == pytps::FaultKind::none) bad("unknown fault kind '" + name + "'");
                    } else if (fk == "probability") s.probability = fi.second.cast<double>();
                    else if (fk == "every") s.every = fi.second.cast<int64_t>();
                    else if (fk == "seconds") s.seconds = fi.second.cast<double>();
                    else if (fk == "after_events") s.after_events = fi.second.cast<int64_t>();
                    else if (fk == "retry_after_s") s.retry_after_s = fi.second.cast<int64_t>();
                    else bad("unknown fault field '" + fk + "'");
                }
                if (s.kind == pytps::FaultKind::none) bad("a fault needs a 'kind'");
                c.faults.push_back(s);
            }
        } else {
            bad("unknown emulator setting '" + k + "'");
        }
    }
    if (c.tokens_per_event < 1) bad("tokens_per_event must be at least 1");
    if (c.coalesce < 0) bad("coalesce must be 0 (whatever is due) or at least 1");
    if (c.itl_dist == Dist::replay && c.itl_replay_ns.empty()) bad("itl_dist 'replay' needs a non-empty itl_replay_ns");
    if (c.prefix_cache_tokens < 0) bad("prefix_cache_tokens must be 0 (no cache) or more");
    if (c.prefix_cache_block_tokens < 1) bad("prefix_cache_block_tokens must be at least 1");
    if (!(c.answers.accuracy >= 0.0 && c.answers.accuracy <= 1.0)) bad("answer_accuracy must be within [0, 1]");
    if (!(c.answers.accuracy_drop >= 0.0 && c.answers.accuracy_drop <= 1.0)) bad("answer_accuracy_drop must be within [0, 1]");
    if (c.agent.turns < 0) bad("agent_turns must be 0 (not an agent) or more");
    if (c.agent.calls < 1 || c.agent.calls > 64) bad("agent_calls must be within [1, 64]");
    if (!(c.agent.invalid >= 0.0 && c.agent.invalid <= 1.0)) bad("agent_invalid must be within [0, 1]");
    if (c.max_batch < 0) bad("max_batch must be 0 (no limit) or at least 1");
    if (!(c.batch_slowdown >= 0.0 && c.batch_slowdown <= 100.0)) bad("batch_slowdown must be within [0, 100]");
    if (!(c.power_idle_w >= 0.0 && c.power_per_stream_w >= 0.0 && c.power_idle_w < 1e7 && c.power_per_stream_w < 1e7))
        bad("power_idle_w and power_per_stream_w must be 0 or more watts");
    return c;
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
    py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
    if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(T));
    return a;
}

py::dict record_dict(const pytps::TruthRecord& r) {
    py::dict d;
    d["seq"] = r.seq;
    d["id"] = r.id;
    d["api"] = r.api;
    d["path"] = r.path;
    d["status"] = r.status;
    d["fault"] = r.fault;
    d["stream"] = r.stream;
    d["completed"] = r.completed;
    d["client_closed"] = r.client_closed;
    d["answer"] = r.answer.empty() ? py::object(py::none()) : py::object(py::str(r.answer));
    d["answer_sent"] = r.answer_sent;
    d["received_ns"] = r.received_ns;
    d["received_kernel_ns"] = r.received_kernel_ns == INT64_MIN ? py::object(py::none()) : py::object(py::int_(r.received_kernel_ns));
    d["headers_sent_ns"] = r.headers_sent_ns;
    d["done_ns"] = r.done_ns;
    d["admitted_ns"] = r.admitted_ns;
    d["released_ns"] = r.released_ns;
    d["queued_ns"] = r.queued_ns;
    d["prompt_tokens"] = r.prompt_tokens;
    d["inputs"] = r.inputs;
    d["dimensions"] = r.dimensions;
    d["results"] = r.results;
    d["images"] = r.images;
    d["image_tokens"] = r.image_tokens;
    d["cached_tokens"] = r.cached_tokens;
    // The agent model: the turn (None: not an agent request), the tool results the request
    // carried (call id, content bytes) and the calls sent.
    d["turn"] = r.turn >= 0 ? py::object(py::int_(r.turn)) : py::object(py::none());
    py::list results, calls;
    for (size_t i = 0; i < r.tool_results.size(); ++i) {
        py::dict t;
        t["id"] = r.tool_results[i];
        t["chars"] = r.tool_result_chars[i];
        results.append(t);
    }
    for (const auto& c : r.tool_calls) {
        py::dict t;
        t["id"] = c.id;
        t["name"] = c.name;
        t["arguments"] = c.arguments;
        t["valid"] = c.valid;
        calls.append(t);
    }
    d["tool_results"] = results;
    d["tool_calls"] = calls;
    d["output_tokens"] = r.output_tokens;
    d["reasoning_tokens"] = r.reasoning_tokens;
    d["planned_events"] = r.planned_events;
    d["keepalives"] = r.keepalives;
    d["audio_bytes_per_s"] = r.audio_bytes_per_s;
    d["input_audio_s"] = r.input_audio_s;
    d["write_audio_s"] = to_array(r.write_audio_s);
    d["transcript"] = r.transcript;
    d["transcript_words"] = r.transcript_words;
    d["planted_errors"] = r.planted_errors;
    d["scheduled_ns"] = to_array(r.scheduled_ns);
    d["sent_ns"] = to_array(r.sent_ns);
    d["tokens"] = to_array(r.tokens);
    d["kinds"] = to_array(r.kinds);
    d["batch"] = to_array(r.batch);
    return d;
}

}  // namespace

void register_emulator(py::module_& m) {
    py::class_<pytps::Emulator>(m, "Emulator",
                                "Emulator(config: dict)\n\n"
                                "The native streaming emulator (use pytps.Emulator, which validates the settings\n"
                                "and builds this dict). It serves OpenAI, Anthropic and Ollama endpoints on its own\n"
                                "thread and records when each event's write returned.")
        .def(py::init([](const py::dict& d) { return new pytps::Emulator(config_from(d)); }), py::arg("config"))
        .def(
            "start",
            [](pytps::Emulator& e) {
                try {
                    py::gil_scoped_release release;
                    return e.start();
                } catch (const std::runtime_error& ex) {
                    throw py::value_error(ex.what());
                }
            },
            "start() -> int\n\nBinds, listens and starts the timing thread; returns the port. Raises ValueError\n"
            "when the address cannot be bound or the emulator was already started.")
        .def(
            "stop",
            [](pytps::Emulator& e) {
                py::gil_scoped_release release;
                e.stop();
            },
            "stop() -> None\n\nStops the thread and closes every connection (open streams are recorded as\n"
            "incomplete). Safe to call twice. Raises RuntimeError (once stopped) if writing the truth log failed.")
        .def_property_readonly("port", &pytps::Emulator::port, "The bound port (0 before start()).")
        .def_property_readonly("running", &pytps::Emulator::running, "True between start() and stop().")
        .def(
            "truth",
            [](pytps::Emulator& e, bool clear) {
                std::vector<pytps::TruthRecord> recs;
                {
                    py::gil_scoped_release release;
                    recs = e.truth(clear);
                }
                py::list out;
                for (const auto& r : recs) out.append(record_dict(r));
                return out;
            },
            py::arg("clear") = false,
            "truth(clear=False) -> list[dict]\n\nOne record per finished generation request, in finishing order\n"
            "(see pytps.Emulator.truth for the fields). clear=True hands the records over and forgets them.")
        .def(
            "wait_truth",
            [](pytps::Emulator& e, size_t n, double timeout_s) {
                py::gil_scoped_release release;
                return e.wait_truth(n, static_cast<int64_t>(timeout_s * 1e9));
            },
            py::arg("n"), py::arg("timeout_s") = 5.0,
            "wait_truth(n, timeout_s=5.0) -> int\n\nWaits until at least n records are kept (or the timeout\n"
            "passes) and returns how many there are. The client has a response's last bytes a moment\n"
            "before its record is published.")
        .def(
            "stats",
            [](const pytps::Emulator& e) {
                const pytps::EmulatorStats s = e.stats();
                py::dict d;
                d["connections_accepted"] = s.connections_accepted;
                d["connections_open"] = s.connections_open;
                d["requests"] = s.requests;
                d["generation_requests"] = s.generation_requests;
                d["streams_active"] = s.streams_active;
                d["decoding"] = s.decoding;
                d["queued"] = s.queued;
                d["events_sent"] = s.events_sent;
                d["writes"] = s.writes;
                d["bytes_sent"] = s.bytes_sent;
                d["write_blocked"] = s.write_blocked;
                d["faults"] = s.faults;
                d["spins"] = s.spins;
                d["sleeps"] = s.sleeps;
                d["parse_bytes"] = s.parse_bytes;
                d["first_accept_ns"] = s.first_accept_ns;
                d["prefix_cache_resets"] = s.prefix_cache_resets;
                return d;
            },
            "stats() -> dict\n\nCounters: connections, requests, events and bytes written, blocked writes,\n"
            "faults applied, deadlines met by spinning, kernel waits with a timeout (sleeps), bytes the\n"
            "request parser examined (parse_bytes); and now: requests decoding and queued (the load model).");
}

}  // namespace pytps_bindings
