#include <pybind11/numpy.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "core/stream_recorder.hpp"

namespace pytps_bindings {
namespace {

using pytps::StreamRecorder;

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
    if (v.empty()) {
        // One empty array per type, shared by every read-out (a whole body's record has four):
        // as records share theirs (pytps.measure.records._empty), an array of no elements has
        // nothing to write in place, and resize() refuses one referenced elsewhere. Made once,
        // with the GIL held; never freed (it must outlive the interpreter's teardown order).
        static const auto* empty = new py::array_t<T>(0);
        return *empty;
    }
    py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
    std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
    return out;
}

py::object time_or_none(int64_t t) {
    if (t == StreamRecorder::kNoTime) return py::none();
    return py::int_(t);
}


py::dict usage_dict(const pytps::Usage& u) {
    py::dict d;
    auto put = [&](const char* k, int64_t v) {
        if (v >= 0) d[k] = v;
    };
    put("prompt_tokens", u.prompt_tokens);
    put("completion_tokens", u.completion_tokens);
    put("total_tokens", u.total_tokens);
    put("reasoning_tokens", u.reasoning_tokens);
    put("cached_tokens", u.cached_tokens);
    return d;
}

py::object optional_text(const std::string& s) {
    if (s.empty()) return py::none();
    return decode_text(s);
}

py::list tool_calls_list(const StreamRecorder& r) {
    std::vector<const pytps::ToolCall*> calls;
    for (const auto& c : r.state().tool_calls) calls.push_back(&c);
    std::stable_sort(calls.begin(), calls.end(), [](auto a, auto b) { return a->index < b->index; });
    py::list out;
    for (const auto* c : calls) {
        py::dict d;
        d["index"] = c->index;
        d["id"] = c->id.empty() ? py::object(py::none()) : py::object(decode_text(c->id));
        d["name"] = decode_text(c->name);
        d["arguments"] = decode_text(c->arguments);
        out.append(d);
    }
    return out;
}

py::object finish_reason_of(const StreamRecorder& r) {
    if (!r.state().has_finish_reason) return py::none();
    return decode_text(r.state().finish_reason);
}

py::object server_timings_of(const StreamRecorder& r) {
    const auto& st = r.state();
    if (!st.server_timings_source) return py::none();
    return py::make_tuple(st.server_timings_source, decode_text(st.server_timings));
}

py::object audio_format_of(const StreamRecorder& r) {
    const pytps::AudioFormat& f = r.audio_format();
    if (f.sample_rate == 0) return py::none();
    py::dict d;
    d["sample_rate"] = f.sample_rate;
    d["channels"] = f.channels;
    d["bits_per_sample"] = f.bits_per_sample;
    d["format_tag"] = f.format_tag;
    return d;
}

}  // namespace

// Every read-out a finished request's record takes, in one call (RequestRecord.fill_from_recorder):
// one Python call per attribute was ~3% of a 1-token request's client CPU (issue 42).
py::tuple recorder_readout(const StreamRecorder& r) {
    const auto& st = r.state();
    return py::make_tuple(optional_text(st.response_id), optional_text(st.model), finish_reason_of(r),
                          usage_dict(st.usage), server_timings_of(r), st.done, r.events(),
                          to_array(r.output_times_ns()), to_array(r.output_kinds()), to_array(r.output_tokens()),
                          to_array(r.output_chars()), time_or_none(r.first_output_ns()),
                          time_or_none(r.first_answer_ns()), time_or_none(r.last_output_ns()),
                          time_or_none(r.end_ns()), decode_text(st.text), decode_text(st.reasoning_text),
                          py::bytes(r.body()), tool_calls_list(r), audio_format_of(r),
                          time_or_none(r.first_body_ns()));
}

py::object recorder_error(const StreamRecorder& r) {
    const auto& e = r.error();
    if (!e.present) return py::none();
    py::dict d;
    d["kind"] = e.kind;
    d["message"] = decode_text(e.message);
    d["event_index"] = e.event_index;
    d["payload"] = e.has_payload ? py::object(decode_text(e.payload)) : py::object(py::none());
    return d;
}

void register_recorder(py::module_& m) {
    m.attr("KIND_CONTENT") = static_cast<int>(pytps::kContent);
    m.attr("KIND_REASONING") = static_cast<int>(pytps::kReasoning);
    m.attr("KIND_TOOL") = static_cast<int>(pytps::kTool);
    py::tuple names(std::size(pytps::kAllDialects));
    for (size_t i = 0; i < std::size(pytps::kAllDialects); ++i) names[i] = pytps::dialect_name(pytps::kAllDialects[i]);
    m.attr("DIALECTS") = names;
    // Each dialect's generation paths, its default first (core/dialects.hpp, kApiPaths).
    py::dict paths;
    for (pytps::Dialect d : pytps::kAllDialects) {
        py::list of_dialect;
        for (const pytps::ApiPath& a : pytps::kApiPaths)
            if (a.dialect == d) of_dialect.append(a.path);
        paths[pytps::dialect_name(d)] = py::tuple(of_dialect);
    }
    m.attr("DIALECT_PATHS") = paths;
    // The APIs answered by one JSON body (core/dialect_table.hpp, kBodyApiPaths): name -> path.
    py::dict body_paths;
    for (const pytps::BodyApiPath& a : pytps::kBodyApiPaths) body_paths[a.name] = a.path;
    m.attr("BODY_API_PATHS") = body_paths;
    // The audio APIs (core/dialect_table.hpp, kAudioApiPaths): name -> path.
    py::dict audio_paths;
    for (const pytps::AudioApiPath& a : pytps::kAudioApiPaths) audio_paths[a.name] = a.path;
    m.attr("AUDIO_API_PATHS") = audio_paths;

    py::class_<StreamRecorder>(
        m, "StreamRecorder",
        "StreamRecorder(dialect)\n\n"
        "The per-request hot path: frames one response stream (SSE, or NDJSON for ollama), extracts\n"
        "what each event generated and stamps every event with the t_ns of the chunk that completed it.\n"
        "No Python object is created per event; read-outs are built when asked for.")
        .def(py::init([](const std::string& dialect) {
                 pytps::Dialect d;
                 if (!pytps::parse_dialect(dialect, d))
                     throw py::value_error("unknown dialect '" + dialect + "'; use one of: " + pytps::dialect_list());
                 return new StreamRecorder(d);
             }),
             py::arg("dialect"))
        .def(
            "feed",
            [](StreamRecorder& self, py::handle data, int64_t t_ns) {
                if (self.closed()) throw py::value_error("feed() after close(): call reset() to record a new stream");
                BytesArg bytes(data);
                return self.feed(bytes.data(), bytes.size(), t_ns);
            },
            py::arg("data"), py::arg("t_ns"),
            "feed(data, t_ns) -> int\n\n"
            "Consume one chunk (bytes, bytearray or memoryview, split anywhere) read at t_ns\n"
            "(CLOCK_MONOTONIC ns). Returns the number of output-bearing events it completed.\n"
            "Raises ValueError after close().")
        .def("close", &StreamRecorder::close, py::arg("t_ns"),
             "close(t_ns)\n\nEnd of the body at t_ns: sets end_ns when no terminal marker was seen, records a\n"
             "protocol error when the stream ended inside an SSE event, and takes an unterminated last\n"
             "NDJSON line as an event. Only the first call counts.")
        .def("reset", &StreamRecorder::reset, "Forget everything, ready for a new stream of the same dialect.")
        .def_property_readonly("dialect", [](const StreamRecorder& r) { return pytps::dialect_name(r.dialect()); })
        .def_property_readonly("closed", &StreamRecorder::closed)
        .def_property_readonly("output_times_ns", [](const StreamRecorder& r) { return to_array(r.output_times_ns()); },
                               "int64 array: arrival t_ns of each output-bearing event.")
        .def_property_readonly("output_kinds", [](const StreamRecorder& r) { return to_array(r.output_kinds()); },
                               "uint8 array: KIND_CONTENT, KIND_REASONING or KIND_TOOL per output-bearing event.")
        .def_property_readonly("output_chars", [](const StreamRecorder& r) { return to_array(r.output_chars()); },
                               "int32 array: code points of generated text per output-bearing event.")
        .def_property_readonly("output_tokens", [](const StreamRecorder& r) { return to_array(r.output_tokens()); },
                               "int32 array: tokens per output-bearing event from per-chunk usage, else -1.")
        .def_property_readonly("first_output_ns", [](const StreamRecorder& r) { return time_or_none(r.first_output_ns()); })
        .def_property_readonly("first_answer_ns", [](const StreamRecorder& r) { return time_or_none(r.first_answer_ns()); },
                               "First output-bearing event that is not reasoning, or None.")
        .def_property_readonly("last_output_ns", [](const StreamRecorder& r) { return time_or_none(r.last_output_ns()); })
        .def_property_readonly("end_ns", [](const StreamRecorder& r) { return time_or_none(r.end_ns()); },
                               "Terminal marker's arrival, else close()'s t_ns, else None.")
        .def_property_readonly("text", [](const StreamRecorder& r) { return decode_text(r.state().text); })
        .def_property_readonly("body", [](const StreamRecorder& r) { return py::bytes(r.body()); },
                               "The whole body as it came, for the json and speech-coded dialects (b'' for the others).")
        .def_property_readonly("reasoning_text", [](const StreamRecorder& r) { return decode_text(r.state().reasoning_text); })
        .def_property_readonly("tool_calls", &tool_calls_list)
        .def_property_readonly("usage", [](const StreamRecorder& r) { return usage_dict(r.state().usage); })
        .def_property_readonly("finish_reason", &finish_reason_of)
        .def_property_readonly("response_id", [](const StreamRecorder& r) { return optional_text(r.state().response_id); })
        .def_property_readonly("model", [](const StreamRecorder& r) { return optional_text(r.state().model); })
        .def_property_readonly(
            "server_timings", &server_timings_of,
            "(source, JSON object text) of the server's own timing report (llama.cpp timings, Ollama's durations, "
            "...), the last one the stream carried; None when it carried none.")
        .def_property_readonly(
            "audio_format", &audio_format_of,
            "speech-wav: {sample_rate, channels, bits_per_sample, format_tag} from the WAV header; None otherwise "
            "(PCM's format is the request's).")
        .def("readout", &recorder_readout,
             "readout() -> tuple\n\n"
             "Every read-out at once, in this order: response_id, model, finish_reason, usage,\n"
             "server_timings, done, events, output_times_ns, output_kinds, output_tokens, output_chars,\n"
             "first_output_ns, first_answer_ns, last_output_ns, end_ns, text, reasoning_text, body,\n"
             "tool_calls, audio_format, first_body_ns (each what its attribute gives).")
        .def_property_readonly("first_body_ns", [](const StreamRecorder& r) { return time_or_none(r.first_body_ns()); },
                               "speech-pcm / speech-wav: the first read carrying any byte of the body, else None.")
        .def_property_readonly("done", [](const StreamRecorder& r) { return r.state().done; })
        .def_property_readonly("events", &StreamRecorder::events)
        .def_property_readonly("output_events", [](const StreamRecorder& r) { return r.output_times_ns().size(); })
        .def_property_readonly("protocol_errors", &StreamRecorder::protocol_errors)
        .def_property_readonly("error", &recorder_error);
}

}  // namespace pytps_bindings
