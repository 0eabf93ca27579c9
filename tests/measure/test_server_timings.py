"""Server-reported timings (docs/metrics.md, "Server-reported timings"; docs/real-servers.md):
read from recorded streams of servers that cannot run here, from a real llama-server's recorded
bytes, and from the emulator, which reports them from its own truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytps
from pytps.measure import server_timings
from pytps.measure.records import RequestRecord
from pytps.results.folder import load_journal, load_results

RECORDED = Path(__file__).parent.parent / "recorded_streams"


def record(dialect: str, body: bytes) -> pytps.StreamRecorder:
    rec = pytps.StreamRecorder(dialect)
    rec.feed(body, 1)
    rec.close(2)
    return rec


def read(dialect: str, body: bytes, ttft_s: float | None = 0.5, tpot_s: float | None = 0.01) -> dict | None:
    rec = record(dialect, body)
    return server_timings.read(rec.server_timings, rec.usage, ttft_s, tpot_s)


def test_llama_cpp_recorded_chat_stream_timings_on_the_finish_chunk():
    # llama-server 0.3.36 (llama-cpp-python's vendored llama.cpp), no include_usage: the timings
    # ride on the finish chunk. Its prompt was served from the cache but for one token.
    st = read("openai-chat", (RECORDED / "llama-cpp-0.3.36-chat.sse").read_bytes(), ttft_s=0.010, tpot_s=0.0007)
    assert st is not None and st["source"] == "llama.cpp"
    f = st["fields"]
    assert (st["prompt_tokens"], st["cached_tokens"], st["decode_tokens"]) == (f["prompt_n"], f["cache_n"], 3)
    assert st["prompt_s"] == pytest.approx(f["prompt_ms"] / 1e3)
    assert st["decode_s"] == pytest.approx(f["predicted_ms"] / 1e3)
    # llama.cpp's own per-token figure is over predicted_n - 1 steps: the same as pytps's TPOT.
    assert st["tpot_s"] == pytest.approx(f["predicted_per_token_ms"] / 1e3)
    assert st["ttft_minus_prompt_s"] == pytest.approx(0.010 - f["prompt_ms"] / 1e3)
    assert st["tpot_minus_server_s"] == pytest.approx(0.0007 - st["tpot_s"])
    assert set(st) == {*server_timings.KEYS, "fields"}
    assert st["queue_s"] is None and st["load_s"] is None and st["total_s"] is None


def test_llama_cpp_recorded_completions_stream_timings_on_the_usage_chunk():
    rec = record("openai-completions", (RECORDED / "llama-cpp-0.3.36-completions-usage.sse").read_bytes())
    st = server_timings.read(rec.server_timings, rec.usage, None, None)
    assert st is not None
    assert st["decode_tokens"] == rec.usage["completion_tokens"] == rec.output_events == 3
    assert st["prompt_tokens"] + st["cached_tokens"] == rec.usage["prompt_tokens"]
    assert st["ttft_minus_prompt_s"] is None and st["tpot_minus_server_s"] is None


# Ollama's documented final message of /api/chat (durations in ns).
OLLAMA = (
    b'{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":"Hi"},'
    b'"done":false}\n'
    b'{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},'
    b'"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,'
    b'"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}\n'
)


def test_ollama_final_message_durations():
    st = read("ollama", OLLAMA, ttft_s=0.4)
    assert st is not None and st["source"] == "ollama"
    assert st["prompt_tokens"] == 26 and st["decode_tokens"] == 282
    assert st["prompt_s"] == pytest.approx(0.342546)
    assert st["decode_s"] == pytest.approx(4.535599)
    assert st["tpot_s"] == pytest.approx(4.535599 / 282)  # Ollama's rate: eval_count / eval_duration
    assert st["load_s"] == pytest.approx(0.001334875)
    assert st["total_s"] == pytest.approx(4.883583458)
    assert st["ttft_minus_prompt_s"] == pytest.approx(0.4 - 0.342546)
    assert st["cached_tokens"] is None and st["queue_s"] is None
    assert st["fields"]["eval_count"] == 282


def test_ollama_counts_still_fill_usage():
    rec = record("ollama", OLLAMA)
    assert rec.usage["prompt_tokens"] == 26 and rec.usage["completion_tokens"] == 282


# Groq: every chunk's x_groq carries the request id; the last one's also its usage with times (s).
GROQ = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b-instant",'
    b'"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    b'"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01"}}\n\n'
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b-instant",'
    b'"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,'
    b'"finish_reason":null}]}\n\n'
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b-instant",'
    b'"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],'
    b'"x_groq":{"id":"req_01","usage":{"queue_time":0.0031,"prompt_tokens":40,"prompt_time":0.0042,'
    b'"completion_tokens":100,"completion_time":0.08,"total_tokens":140,"total_time":0.0842}}}\n\n'
    b"data: [DONE]\n\n"
)


def test_groq_x_groq_usage_times():
    st = read("openai-chat", GROQ, ttft_s=0.05)
    assert st is not None and st["source"] == "groq"
    assert (st["prompt_tokens"], st["decode_tokens"]) == (40, 100)
    assert (st["queue_s"], st["prompt_s"], st["decode_s"], st["total_s"]) == (0.0031, 0.0042, 0.08, 0.0842)
    assert st["tpot_s"] == pytest.approx(0.08 / 100)
    assert st["ttft_minus_prompt_s"] == pytest.approx(0.05 - 0.0042)


def test_groq_stream_cut_before_its_times_reports_none():
    first_two = GROQ.split(b"\n\n")[:2]
    assert read("openai-chat", b"\n\n".join(first_two) + b"\n\n") is None  # x_groq with only an id


# Cerebras: time_info (s) beside usage on the last chunk.
CEREBRAS = (
    b'data: {"id":"chatcmpl-2","choices":[{"delta":{"content":"Hello","role":"assistant"},"index":0}],'
    b'"created":1,"model":"llama3.1-8b","system_fingerprint":"fp_2","object":"chat.completion.chunk"}\n\n'
    b'data: {"id":"chatcmpl-2","choices":[{"delta":{},"finish_reason":"stop","index":0}],"created":1,'
    b'"model":"llama3.1-8b","system_fingerprint":"fp_2","object":"chat.completion.chunk",'
    b'"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22},'
    b'"time_info":{"queue_time":0.000073161,"prompt_time":0.00107448,"completion_time":0.00565807,'
    b'"total_time":0.0222249,"created":1723733419}}\n\n'
    b"data: [DONE]\n\n"
)


def test_cerebras_time_info():
    st = read("openai-chat", CEREBRAS)
    assert st is not None and st["source"] == "cerebras"
    assert (st["prompt_tokens"], st["decode_tokens"]) == (12, 10)  # the counts come from usage
    assert st["prompt_s"] == 0.00107448 and st["queue_s"] == 0.000073161
    assert st["tpot_s"] == pytest.approx(0.00565807 / 10)


def test_a_stream_without_timings_reports_none():
    body = (RECORDED / "llama-cpp-0.3.36-chat.sse").read_bytes()
    plain = b"\n\n".join(e for e in body.split(b"\n\n") if b'"timings"' not in e)
    rec = record("openai-chat", plain)
    assert rec.server_timings is None
    assert server_timings.read(None, {}, 0.1, 0.1) is None


def test_a_malformed_event_takes_its_timings_back():
    # The event is read up to its timings, then found malformed: the state is rolled back, so the
    # earlier report stands.
    good = b'data: {"choices":[],"timings":{"prompt_n":1,"prompt_ms":2.0,"predicted_n":3,"predicted_ms":4.0}}\n\n'
    bad = b'data: {"choices":[],"timings":{"prompt_n":9,"prompt_ms":9.0,"predicted_n":9,"predicted_ms":9.0},"x":}\n\n'
    rec = record("openai-chat", good + bad + b"data: [DONE]\n\n")
    assert rec.protocol_errors == 1
    assert rec.server_timings is not None
    assert json.loads(rec.server_timings[1])["prompt_n"] == 1


def test_unknown_or_unreadable_reports_are_none():
    assert server_timings.read(("llama.cpp", "not json"), {}, None, None) is None
    assert server_timings.read(("someone", "{}"), {}, None, None) is None
    assert server_timings.read(("llama.cpp", "[1]"), {}, None, None) is None


def test_record_carries_the_report():
    rec = RequestRecord(index=0)
    rec.fill_from_recorder(record("ollama", OLLAMA))
    assert rec.server_timings is not None and rec.server_timings[0] == "ollama"


@pytest.mark.parametrize("api", ["openai-chat", "openai-completions"])
def test_the_emulator_reports_llama_cpp_timings_from_its_truth(api, tmp_path):
    # Prompt time: the request's arrival to the first token's due time; decode time: the first
    # token's due time to the last's (the truth's scheduled_ns), in llama.cpp's ms with µs digits.
    with pytps.Emulator(ttft_ms=20, itl_us=2000) as emu:
        result = pytps.run(emu.base_url, api=api, requests=3, concurrency=1, output_tokens=10,
                           out=tmp_path / "r", progress=None)
        truth = {t["id"]: t for t in emu.truth()}
    lines = [x for x in load_journal(result.out_dir) if x["ok"]]
    assert len(lines) == 3
    for line in lines:
        st = line["server_timings"]
        t = truth[line["response_id"]]
        assert st["source"] == "llama.cpp"
        assert st["decode_tokens"] == line["output_tokens"] == t["output_tokens"] == 10
        assert st["prompt_tokens"] == line["usage"]["prompt_tokens"] == t["prompt_tokens"]
        assert st["cached_tokens"] == 0
        due = t["scheduled_ns"]
        assert st["prompt_s"] == pytest.approx((due[0] - t["received_ns"]) / 1e9, abs=1e-6)
        assert st["decode_s"] == pytest.approx((due[-1] - due[0]) / 1e9, abs=1e-6)
        # The client sent before the server received, and read the first token after it was due.
        assert st["ttft_minus_prompt_s"] >= -1e-6
    summary = load_results(result.out_dir)["summary"]["server_timings"]
    assert summary["source"] == "llama.cpp" and summary["requests"] == 3
    assert summary["tpot_s"]["count"] == 3


def test_the_emulator_reports_ollama_durations(tmp_path):
    with pytps.Emulator(ttft_ms=20, itl_us=2000) as emu:
        result = pytps.run(emu.base_url, api="ollama", requests=3, concurrency=1, output_tokens=10,
                           out=tmp_path / "r", progress=None)
    lines = [x for x in load_journal(result.out_dir) if x["ok"]]
    assert len(lines) == 3
    for line in lines:
        st = line["server_timings"]
        assert st["source"] == "ollama"
        assert st["decode_tokens"] == line["output_tokens"] == 10
        assert st["prompt_tokens"] == line["usage"]["prompt_tokens"]
        assert st["load_s"] == 0 and st["total_s"] >= st["prompt_s"] + st["decode_s"] - 1e-9
        assert 0.019 < st["prompt_s"] < 1.0  # 20 ms asked for
