"""StreamRecorder against the providers' documented streams (tests/corpus) and the .pyi contract.

Every corpus body is fed whole, one byte at a time and split at random points; chunk k is fed
at t_ns = 1000 * (k + 1) and close() at 1000 * (chunks + 1), so the time each event must carry
is computable: the t_ns of the chunk holding the byte that completes it (see recorder_framing).

Where the contract leaves a choice open the tests take one reading and say so in a comment
starting "READING:"; those are the questions listed in the report to the lead.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recorder_framing import chunk_of, frame_events

import pytps

CORPUS = Path(__file__).parent.parent / "corpus"
CASES = sorted(CORPUS.glob("*/*.txt"))
CASE_IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]
ALL_DIALECTS = ("openai-chat", "openai-completions", "openai-responses", "anthropic", "ollama")


def kind_code(name: str) -> int:
    return {"content": pytps.KIND_CONTENT, "reasoning": pytps.KIND_REASONING, "tool": pytps.KIND_TOOL}[name]


def t_of(k: int) -> int:
    return 1000 * (k + 1)


def load(path: Path) -> tuple[str, bytes, dict]:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return path.parent.name, path.read_bytes(), expected


def record(dialect: str, raw: bytes, bounds: list[int]):
    """Feeds raw split so that chunk k ends at bounds[k]; returns (recorder, feed return values)."""
    rec = pytps.StreamRecorder(dialect)
    returns = []
    start = 0
    for k, end in enumerate(bounds):
        returns.append(rec.feed(raw[start:end], t_of(k)))
        start = end
    rec.close(t_of(len(bounds)))
    return rec, returns


def readouts(rec) -> dict:
    """Everything but the times, for comparing two ways of feeding the same body."""
    return {
        "events": rec.events,
        "output_events": rec.output_events,
        "kinds": rec.output_kinds.tolist(),
        "chars": rec.output_chars.tolist(),
        "tokens": rec.output_tokens.tolist(),
        "text": rec.text,
        "reasoning_text": rec.reasoning_text,
        "tool_calls": rec.tool_calls,
        "usage": rec.usage,
        "finish_reason": rec.finish_reason,
        "response_id": rec.response_id,
        "model": rec.model,
        "done": rec.done,
        "error": rec.error,
        "protocol_errors": rec.protocol_errors,
    }


def check_times(rec, returns, raw, dialect, exp, bounds):
    framed, _ = frame_events(raw, dialect)
    ends = [framed[i][0] for i in exp["output_event_indices"]]
    chunks = [chunk_of(e, bounds) for e in ends]
    times = [t_of(k) for k in chunks]
    assert rec.output_times_ns.tolist() == times
    assert returns == [chunks.count(k) for k in range(len(bounds))]
    assert rec.first_output_ns == (times[0] if times else None)
    assert rec.last_output_ns == (times[-1] if times else None)
    answers = [t for t, kind in zip(times, exp["kinds"]) if kind != "reasoning"]
    assert rec.first_answer_ns == (answers[0] if answers else None)
    if exp["done"]:
        assert rec.end_ns == t_of(chunk_of(framed[exp["terminal_event_index"]][0], bounds))
    else:
        assert rec.end_ns == t_of(len(bounds))


def check_expected(rec, dialect, raw, exp):
    framed, _ = frame_events(raw, dialect)
    assert exp["events"] == len(framed), "corpus file and its expected.json disagree"
    assert rec.dialect == dialect
    assert rec.events == exp["events"]
    assert rec.output_events == exp["output_events"]
    assert rec.output_kinds.tolist() == [kind_code(k) for k in exp["kinds"]]
    assert rec.output_chars.tolist() == exp["chars"]
    assert rec.output_tokens.tolist() == exp["output_tokens"]
    assert rec.text == exp["text"]
    assert rec.reasoning_text == exp["reasoning_text"]
    # READING: "index" is the provider's own index (OpenAI tool_calls[].index, Anthropic content
    # block index, Responses output_index, Ollama function.index or order of arrival); "id" is None
    # when the server sent none; Responses "id" is the item's call_id; Ollama's object arguments are
    # read as their JSON text (compact on the wire).
    assert rec.tool_calls == exp["tool_calls"]
    # READING: later reports overwrite earlier ones field by field (Anthropic message_delta does not
    # repeat input_tokens); names the server did not report are absent (no computed total_tokens).
    assert rec.usage == exp["usage"]
    assert rec.finish_reason == exp["finish_reason"]
    assert rec.response_id == exp["response_id"]
    assert rec.model == exp["model"]
    assert rec.done == exp["done"]
    assert rec.protocol_errors == exp["protocol_errors"]
    err, want = rec.error, exp["error"]
    if want is None:
        assert err is None
    else:
        assert err is not None
        assert (err["kind"], err["event_index"]) == (want["kind"], want["event_index"])
        assert isinstance(err["message"], str) and err["message"]
        if want["kind"] == "in_stream":
            assert want["message_contains"] in err["message"]
            assert err["payload"] == want["payload"]


# ---- the corpus -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CASES, ids=CASE_IDS)
def test_corpus_fed_whole(path):
    dialect, raw, exp = load(path)
    bounds = [len(raw)]
    rec, returns = record(dialect, raw, bounds)
    check_expected(rec, dialect, raw, exp)
    check_times(rec, returns, raw, dialect, exp, bounds)


READOUT = ("response_id", "model", "finish_reason", "usage", "server_timings", "done", "events", "output_times_ns",
           "output_kinds", "output_tokens", "output_chars", "first_output_ns", "first_answer_ns", "last_output_ns",
           "end_ns", "text", "reasoning_text", "body", "tool_calls", "audio_format", "first_body_ns")  # fmt: skip


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.tolist() == b.tolist()
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("path", CASES, ids=CASE_IDS)
def test_readout_is_every_attribute_at_once(path):
    # RequestRecord.fill_from_recorder takes them in one call (issue 42): the same values, in READOUT's order.
    dialect, raw, _ = load(path)
    rec, _ = record(dialect, raw, [len(raw) // 2, len(raw)])
    got = rec.readout()
    assert len(got) == len(READOUT)
    for name, value in zip(READOUT, got, strict=True):
        assert _same(value, getattr(rec, name)), name


@pytest.mark.parametrize("path", CASES, ids=CASE_IDS)
def test_corpus_fed_byte_by_byte(path):
    dialect, raw, exp = load(path)
    bounds = list(range(1, len(raw) + 1))
    rec, returns = record(dialect, raw, bounds)
    check_expected(rec, dialect, raw, exp)
    check_times(rec, returns, raw, dialect, exp, bounds)


@pytest.mark.parametrize("path", CASES, ids=CASE_IDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_corpus_split_anywhere_reads_the_same(path, data):
    dialect, raw, exp = load(path)
    cuts = data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=24), label="cuts")
    bounds = sorted(cuts) + [len(raw)]
    whole, _ = record(dialect, raw, [len(raw)])
    rec, returns = record(dialect, raw, bounds)
    assert readouts(rec) == readouts(whole)
    check_times(rec, returns, raw, dialect, exp, bounds)


def _reversed_keys(value):
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


CLEAN_CASES = [p for p in CASES if load(p)[2]["error"] is None]


@pytest.mark.parametrize("path", CLEAN_CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CLEAN_CASES])
def test_corpus_key_order_and_json_spelling_do_not_matter(path):
    # RFC 8259: an object is an unordered collection. Each event is re-written with its keys in
    # reverse order (recursively), compact, non-ASCII written raw, one data: line, no event: field.
    dialect, raw, exp = load(path)
    framed, _ = frame_events(raw, dialect)
    parts = []
    for _, data in framed:
        if data != "[DONE]":
            data = json.dumps(_reversed_keys(json.loads(data)), ensure_ascii=False, separators=(",", ":"))
        parts.append((data + "\n") if dialect == "ollama" else f"data: {data}\n\n")
    body = "".join(parts).encode()
    rec, _ = record(dialect, body, [len(body)])
    got, want = readouts(rec), readouts(record(dialect, raw, [len(raw)])[0])
    if dialect == "ollama":  # arguments are the server's JSON text (its length kept, its order not)
        for calls in (got["tool_calls"], want["tool_calls"]):
            for call in calls:
                call["arguments"] = json.loads(call["arguments"])
    assert got == want


# ---- hand-made streams --------------------------------------------------------------------------


def chat_chunk(delta=None, finish=None, usage=None, choices=True) -> bytes:
    obj = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    obj["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def feed_all(dialect, chunks, close_t=None):
    rec = pytps.StreamRecorder(dialect)
    returns = [rec.feed(c, t) for c, t in chunks]
    if close_t is not None:
        rec.close(close_t)
    return rec, returns


def test_constants_and_dialects():
    assert (pytps.KIND_CONTENT, pytps.KIND_REASONING, pytps.KIND_TOOL) == (0, 1, 2)
    assert tuple(pytps.DIALECTS) == ALL_DIALECTS


@pytest.mark.parametrize("name", ["openai", "OpenAI-Chat", "", "anthropic ", "vllm"])
def test_unknown_dialect_raises_value_error_listing_the_valid_ones(name):
    with pytest.raises(ValueError) as info:
        pytps.StreamRecorder(name)
    for valid in ALL_DIALECTS:
        assert valid in str(info.value)


def test_times_are_those_of_the_chunk_that_completed_each_event():
    a, b, c = chat_chunk({"content": "A"}), chat_chunk({"content": "BB"}), chat_chunk({"content": "CCC"})
    chunks = [
        (a[:10], 100),  # starts A
        (a[10:] + b[:-1], 200),  # completes A; B lacks its final LF
        (b[-1:], 300),  # the LF that dispatches B
        (c + DONE[:5], 400),  # all of C, part of [DONE]
        (b"", 450),  # an empty read changes nothing
        (DONE[5:], 500),
    ]
    rec, returns = feed_all("openai-chat", chunks, close_t=900)
    assert returns == [0, 1, 1, 1, 0, 0]
    assert rec.output_times_ns.tolist() == [200, 300, 400]
    assert rec.output_chars.tolist() == [1, 2, 3]
    assert (rec.first_output_ns, rec.first_answer_ns, rec.last_output_ns) == (200, 200, 400)
    assert rec.end_ns == 500  # the [DONE] chunk, not close()
    assert rec.done and rec.events == 4


def test_one_chunk_may_complete_several_events_and_all_get_its_time():
    body = b"".join(chat_chunk({"content": s}) for s in ["x", "y", "z"]) + DONE
    rec, returns = feed_all("openai-chat", [(body, 7_000_000_123)], close_t=7_000_000_999)
    assert returns == [3]
    assert rec.output_times_ns.tolist() == [7_000_000_123] * 3
    assert rec.end_ns == 7_000_000_123


def test_ndjson_times():
    lines = [json.dumps({"model": "m", "response": s, "done": False}).encode() + b"\n" for s in ["a", "b"]]
    last = json.dumps({"model": "m", "response": "", "done": True, "done_reason": "stop"}).encode() + b"\n"
    chunks = [(lines[0][:-1], 10), (b"\n" + lines[1], 20), (last[:-1], 30), (b"\n", 40)]
    rec, returns = feed_all("ollama", chunks, close_t=50)
    assert returns == [0, 2, 0, 0]
    assert rec.output_times_ns.tolist() == [20, 20]
    assert rec.end_ns == 40 and rec.done and rec.finish_reason == "stop"


def test_ndjson_last_line_without_newline_is_read_at_close():
    # jsonlines.org: "The last character in a file following the last JSON value may be a line
    # separator" -- so it may also be missing. The line's bytes all came with the last chunk.
    body = b'{"model":"m","response":"a","done":false}\n{"model":"m","response":"b","done":true,"done_reason":"stop"}'
    rec = pytps.StreamRecorder("ollama")
    assert rec.feed(body[:30], 10) == 0
    assert rec.feed(body[30:], 20) == 1
    assert rec.events == 1 and not rec.done
    rec.close(30)
    assert rec.events == 2 and rec.text == "ab" and rec.done and rec.error is None
    assert rec.output_times_ns.tolist() == [20, 20]
    assert rec.end_ns == 20


def test_sse_data_line_without_blank_line_is_not_dispatched():
    # WHATWG: at end of stream an event whose blank line never came is discarded.
    rec, _ = feed_all("openai-chat", [(b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n', 10)], close_t=20)
    assert rec.events == 0 and rec.text == ""
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 0


@pytest.mark.parametrize(
    "dialect, body, chars",
    [
        (
            "anthropic",
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"a\\":1}"}}\n\n',
            [11, 7],
        ),
        (
            "openai-responses",
            b'event: response.output_item.added\ndata: {"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}\n\n'
            b'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\\"a\\":1}"}\n\n',
            [11, 7],
        ),
        (
            "openai-chat",
            chat_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]})
            + chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]}),
            [11, 7],
        ),
    ],
)
def test_the_tool_name_is_generated_text(dialect, body, chars):
    # READING: the event that brings a tool's name is output-bearing and its chars count the name.
    rec, _ = feed_all(dialect, [(body, 1)], 2)
    assert rec.output_kinds.tolist() == [pytps.KIND_TOOL] * 2
    assert rec.output_chars.tolist() == chars
    assert [(t["name"], t["arguments"]) for t in rec.tool_calls] == [("get_weather", '{"a":1}')]


@pytest.mark.parametrize(
    "dialect, body, events",
    [
        # role-only, empty delta, content null, usage-only, [DONE]
        (
            "openai-chat",
            chat_chunk({"role": "assistant", "content": ""})
            + chat_chunk({"role": "assistant"})
            + chat_chunk({})
            + chat_chunk({"content": None, "tool_calls": None})
            + chat_chunk({}, "stop")
            + chat_chunk(choices=False, usage={"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1})
            + DONE,
            7,
        ),
        # keep-alive comments dispatch no event at all
        ("openai-chat", b": keep-alive\n\n:\n\n: x\n: y\n\n" + chat_chunk({"content": ""}) + b": ping\n\n", 1),
        ("openai-completions", b'data: {"id":"c","choices":[{"index":0,"text":"","finish_reason":null}]}\n\n' + DONE, 2),
        (
            "anthropic",
            b'event: ping\ndata: {"type": "ping"}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}\n\n'
            b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            b"event: ping\ndata: {\"type\": \"ping\"}\n\n",
            6,
        ),
        (
            "openai-responses",
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":""}\n\n'
            b'event: response.output_text.done\ndata: {"type":"response.output_text.done","item_id":"m","output_index":0,"content_index":0,"text":"already counted"}\n\n'
            b'event: response.function_call_arguments.done\ndata: {"type":"response.function_call_arguments.done","item_id":"f","output_index":1,"arguments":"{}"}\n\n',
            3,
        ),
        ("ollama", b'{"model":"m","message":{"role":"assistant","content":""},"done":false}\n{"model":"m","response":"","done":false}\n', 2),
    ],
)
def test_events_without_generated_text_are_not_output_bearing(dialect, body, events):
    rec, returns = feed_all(dialect, [(body, 1)], close_t=2)
    assert rec.output_events == 0 and returns == [0]
    assert rec.events == events
    for arr in (rec.output_times_ns, rec.output_kinds, rec.output_chars, rec.output_tokens):
        assert len(arr) == 0
    assert rec.first_output_ns is None and rec.first_answer_ns is None and rec.last_output_ns is None
    assert rec.text == "" and rec.reasoning_text == "" and rec.tool_calls == []


def test_first_answer_skips_reasoning_events():
    chunks = [
        (chat_chunk({"role": "assistant", "content": ""}), 10),
        (chat_chunk({"reasoning_content": "hmm"}), 20),
        (chat_chunk({"reasoning": " ok"}), 30),
        (chat_chunk({"content": "Hi"}), 40),
        (chat_chunk({"content": "!"}) + DONE, 50),
    ]
    rec, _ = feed_all("openai-chat", chunks, close_t=60)
    assert rec.output_kinds.tolist() == [pytps.KIND_REASONING] * 2 + [pytps.KIND_CONTENT] * 2
    assert (rec.first_output_ns, rec.first_answer_ns, rec.last_output_ns, rec.end_ns) == (20, 40, 50, 50)
    assert rec.reasoning_text == "hmm ok" and rec.text == "Hi!"


def test_a_tool_call_is_an_answer():
    chunks = [
        (chat_chunk({"reasoning_content": "call it"}), 10),
        (chat_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}), 20),
        (chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}), 30),
    ]
    rec, _ = feed_all("openai-chat", chunks, close_t=40)
    assert rec.first_answer_ns == 20
    assert rec.output_kinds.tolist() == [pytps.KIND_REASONING, pytps.KIND_TOOL, pytps.KIND_TOOL]
    assert rec.tool_calls == [{"index": 0, "id": "call_1", "name": "f", "arguments": "{}"}]


def test_reasoning_sent_in_both_fields_counts_once():
    # vLLM's DeltaMessage copies `reasoning` into the deprecated `reasoning_content`, so both arrive
    # with the same text (also MiniMax, StepFun). The contract reads either field; the text is one.
    chunks = [(chat_chunk({"reasoning": "abc", "reasoning_content": "abc"}), 10),
              (chat_chunk({"reasoning": "d", "reasoning_content": "d"}), 20)]
    rec, _ = feed_all("openai-chat", chunks, close_t=30)
    assert rec.reasoning_text == "abcd"
    assert rec.output_chars.tolist() == [3, 1]


def test_only_reasoning_means_no_answer():
    rec, _ = feed_all("openai-chat", [(chat_chunk({"reasoning_content": "..."}), 10)], close_t=20)
    assert rec.first_output_ns == 10 and rec.first_answer_ns is None


def test_content_wins_over_reasoning_in_one_event():
    rec, _ = feed_all("openai-chat", [(chat_chunk({"reasoning_content": "ab", "content": "cde"}), 10)], close_t=20)
    assert rec.output_kinds.tolist() == [pytps.KIND_CONTENT]
    # READING: chars counts all generated text of the event (reasoning + content), not only the winning kind.
    assert rec.output_chars.tolist() == [5]
    assert rec.text == "cde" and rec.reasoning_text == "ab"
    assert rec.first_answer_ns == 10


def test_end_ns_is_the_done_chunk_time_else_close_time():
    rec, _ = feed_all("openai-chat", [(chat_chunk({"content": "a"}), 10), (DONE, 20)])
    assert rec.done and rec.end_ns == 20
    rec.close(90)
    assert rec.end_ns == 20

    rec, _ = feed_all("openai-chat", [(chat_chunk({"content": "a"}), 10)])
    assert not rec.done and rec.end_ns is None
    rec.close(90)
    assert rec.end_ns == 90 and not rec.done
    rec.close(95)  # idempotent
    assert rec.end_ns == 90 and rec.error is None


@pytest.mark.parametrize(
    "dialect, terminal",
    [
        ("openai-completions", DONE),
        ("anthropic", b'event: message_stop\ndata: {"type":"message_stop"}\n\n'),
        ("openai-responses", b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","status":"completed","model":"m","usage":null}}\n\n'),
        ("openai-responses", b'event: response.failed\ndata: {"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}\n\n'),
        ("openai-responses", b'event: response.incomplete\ndata: {"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}\n\n'),
        ("ollama", b'{"model":"m","response":"","done":true}\n'),
    ],
)
def test_terminal_markers_set_done_and_end_ns(dialect, terminal):
    rec, _ = feed_all(dialect, [(terminal, 33)])
    assert rec.done and rec.end_ns == 33
    rec.close(44)
    assert rec.end_ns == 33


def test_malformed_json_is_a_protocol_error_and_timing_goes_on():
    chunks = [
        (chat_chunk({"content": "a"}), 10),
        (b'data: {"choices":[{"delta":{"content":"b"}\n\n', 20),  # unterminated object
        (b"data: not json\n\n", 25),
        (chat_chunk({"content": "c"}), 30),
        (DONE, 40),
    ]
    rec, returns = feed_all("openai-chat", chunks, close_t=50)
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 1
    assert rec.protocol_errors == 2
    assert rec.events == 5 and returns == [1, 0, 0, 1, 0]
    assert rec.output_times_ns.tolist() == [10, 30]
    assert rec.text == "ac" and rec.done and rec.end_ns == 40


def test_a_malformed_event_contributes_nothing():
    # READING: an event that cannot be read is not half-read: its text is dropped (the implementation
    # takes it back), and so must be the usage, finish_reason, id and model it would have set.
    body = (b'data: {"id":"x1","model":"mm","usage":{"prompt_tokens":5,"completion_tokens":3},'
            b'"choices":[{"index":0,"finish_reason":"stop","delta":{"content":"a"}}],\n\n')
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.error["kind"] == "protocol" and rec.output_events == 0 and rec.text == ""
    assert rec.usage == {}
    assert (rec.finish_reason, rec.response_id, rec.model) == (None, None, None)


def test_a_malformed_terminal_event_does_not_end_the_stream():
    body = b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","status":"completed"}} x\n\n'
    rec, _ = feed_all("openai-responses", [(body, 1)], 2)
    assert not rec.done and rec.end_ns == 2 and rec.error["kind"] == "protocol"


def _tool_delta(index: int, **fields) -> bytes:
    return chat_chunk({"tool_calls": [{"index": index, **fields}]})


@pytest.mark.parametrize("new_id", ["call_zzzzzzzzzzzzzzzz", "c"])
def test_a_malformed_event_takes_back_an_assigned_tool_call_id(new_id):
    # Tool call ids are assigned, not appended: taking the event back by length would leave
    # "call_z..." cut to the old length, or the old id padded with NULs.
    first = _tool_delta(0, id="call_abcdef", type="function", function={"name": "f", "arguments": ""})
    bad = _tool_delta(0, id=new_id, function={"arguments": "{}"})[:-2] + b" x\n\n"
    rec, _ = feed_all("openai-chat", [(first, 1), (bad, 2), (_tool_delta(0, function={"arguments": "{"}), 3)], 4)
    assert rec.protocol_errors == 1 and rec.error["event_index"] == 1
    assert rec.tool_calls == [{"index": 0, "id": "call_abcdef", "name": "f", "arguments": "{"}]


def test_a_malformed_event_teaches_the_caches_nothing():
    # The first event has a long head (id, object, created, model) but is malformed after it. Had the
    # prefix cache kept that head, the next (valid) event would resume after it and never read the
    # id and model the rollback took back.
    good = (b'{"id":"chatcmpl-0123456789","object":"chat.completion.chunk","created":1694268190,'
            b'"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"}}]}')
    body = b"data: " + good + b" x\n\n" + b"data: " + good + b"\n\n"
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.protocol_errors == 1
    assert (rec.response_id, rec.model, rec.text) == ("chatcmpl-0123456789", "gpt-4o", "Hi")


def test_tool_calls_per_stream_are_capped_with_a_protocol_error():
    # A stream that opens more than 1024 tool calls is hostile: the event that would open call
    # 1025 is rejected (a protocol error) and later events for the calls already open still count.
    body = b"".join(_tool_delta(i, id=f"call_{i}", function={"name": "f", "arguments": ""}) for i in range(1025))
    body += _tool_delta(5, function={"arguments": "{}"})
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.protocol_errors == 1
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 1024
    assert "1024 tool calls" in rec.error["message"]
    calls = rec.tool_calls
    assert len(calls) == 1024 and calls[-1]["index"] == 1023
    assert calls[5] == {"index": 5, "id": "call_5", "name": "f", "arguments": "{}"}
    assert rec.output_events == 1025


def _sse_event(data: str) -> str:
    return "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"


@pytest.mark.parametrize("path", CLEAN_CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CLEAN_CASES])
def test_a_malformed_copy_of_any_event_inserted_anywhere_changes_nothing(path):
    # A malformed event is recorded as a protocol error and leaves the recorder exactly as it was:
    # event j with trailing garbage (its effects happen, then the reader fails), put before event k,
    # must change nothing but events, protocol_errors and error.
    dialect, raw, _ = load(path)
    datas = [data for _, data in frame_events(raw, dialect)[0]]
    frame = (lambda d: d + "\n") if dialect == "ollama" else _sse_event
    clean = "".join(frame(d) for d in datas).encode()
    want = readouts(record(dialect, clean, [len(clean)])[0])
    for k in range(len(datas) + 1):
        for j in sorted({0, k - 1, k, len(datas) - 1} & set(range(len(datas)))):
            events = [frame(d) for d in datas]
            events.insert(k, frame(datas[j] + " x"))
            body = "".join(events).encode()
            got = readouts(record(dialect, body, [len(body)])[0])
            assert got["protocol_errors"] == want["protocol_errors"] + 1, (k, j)
            for key in ("events", "protocol_errors", "error"):
                del got[key]
            assert got == {k2: v for k2, v in want.items() if k2 not in ("events", "protocol_errors", "error")}, (k, j)


def _compact_event(obj) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def test_a_shared_prefix_does_not_hide_a_longer_number():
    # Both events are valid JSON (RFC 8259). The second starts with the same bytes as the first up
    # to and including `"created":1`, but its number goes on (12): it must still be read.
    head = {"id": "chatcmpl-abcdefghijklmnop", "object": "chat.completion.chunk"}
    body = (_compact_event({**head, "created": 1, "choices": [{"index": 0, "delta": {"content": "a"}}]})
            + _compact_event({**head, "created": 12, "choices": [{"index": 0, "delta": {"content": "b"}}]})
            + _compact_event({**head, "created": 1.5, "choices": [{"index": 0, "delta": {"content": "c"}}]})
            + _compact_event({**head, "created": 1e5, "choices": [{"index": 0, "delta": {"content": "d"}}]}))
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.error is None and rec.protocol_errors == 0
    assert rec.text == "abcd" and rec.output_events == 4


_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
_json_values = st.recursive(_json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
_extra_keys = st.dictionaries(st.sampled_from(["object", "created", "system_fingerprint", "x", "obfuscation", "service_tier"]), _json_values, max_size=3)


@settings(max_examples=150, deadline=None)
@given(before=_extra_keys, after=_extra_keys, contents=st.lists(st.text(max_size=10), min_size=1, max_size=6), vary=st.booleans())
def test_random_valid_chunks_are_read_exactly(before, after, contents, vary):
    # Chunks that share (or, with vary, almost share) their bytes, as real streams do, with arbitrary
    # JSON around the choices: the reader and its caches must read every one of them exactly.
    body = b""
    for i, text in enumerate(contents):
        obj = {"id": "chatcmpl-0123456789abcdef0123", **before}
        if vary:
            obj["created"] = 10 ** i  # 1, 10, 100: each number extends the previous one's digits
        obj["choices"] = [{"index": 0, "delta": {"content": text}, "finish_reason": None}]
        obj.update({k: v for k, v in after.items() if k not in obj})
        body += _compact_event(obj)
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.error is None
    assert rec.text == "".join(contents)
    assert rec.output_chars.tolist() == [len(t) for t in contents if t]


def _strict_loads(text: str):
    def reject(constant):
        raise ValueError(constant)
    return json.loads(text, parse_constant=reject)


_MUTATION_BYTES = [c for c in range(0x20, 0x7F)]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_mutated_event_is_rejected_exactly_when_it_is_not_json(data):
    # Differential check of the strict JSON reader (and its caches) against Python's json module:
    # events 0 and 2 teach the caches the stream's shape; event 1 gets one byte replaced.
    chunk = {"id": "chatcmpl-0123456789abcdef0123", "object": "chat.completion.chunk", "created": 1694268190,
             "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {"content": "Hello"}, "logprobs": None, "finish_reason": None}]}
    good = json.dumps(chunk, separators=(",", ":"))
    pos = data.draw(st.integers(0, len(good) - 1), label="pos")
    new = data.draw(st.sampled_from(_MUTATION_BYTES), label="byte")
    bad = good[:pos] + chr(new) + good[pos + 1:]
    try:
        _strict_loads(bad)
        valid = True
    except ValueError:
        valid = False
    body = ("data: " + good + "\n\n" + "data: " + bad + "\n\n" + "data: " + good + "\n\n").encode()
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.events == 3
    assert (rec.protocol_errors == 0) == valid, f"event 1: {bad!r}"
    assert rec.text.startswith("Hello") and rec.text.endswith("Hello")


@pytest.mark.parametrize("dialect", ["anthropic", "openai-responses", "ollama"])
def test_malformed_json_in_other_dialects(dialect):
    bad = b"{bad\n" if dialect == "ollama" else b"event: x\ndata: {bad\n\n"
    rec, _ = feed_all(dialect, [(bad, 10)], close_t=20)
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 0 and rec.protocol_errors == 1


def test_an_overlong_line_is_a_protocol_error_and_later_events_count():
    # The contract names "an overlong line" among protocol errors; the SSE parser's bound is 16 MiB.
    big = b"data: " + b"x" * (17 << 20) + b"\n\n"
    chunks = [(chat_chunk({"content": "a"}), 10), (big, 20), (chat_chunk({"content": "b"}) + DONE, 30)]
    rec, returns = feed_all("openai-chat", chunks, close_t=40)
    assert rec.error is not None and rec.error["kind"] == "protocol"
    assert rec.text == "ab" and rec.output_times_ns.tolist() == [10, 30]
    assert rec.done


def test_stream_ending_inside_an_event_is_a_protocol_error_at_close():
    rec, _ = feed_all("openai-chat", [(chat_chunk({"content": "a"}) + b'data: {"choi', 10)])
    assert rec.error is None
    rec.close(20)
    assert rec.error["kind"] == "protocol"
    # READING: the unfinished event gets the index it would have had (= events framed so far).
    assert rec.error["event_index"] == rec.events == 1
    assert rec.end_ns == 20 and not rec.done


# JSON strings whose decoding must match json.loads exactly.
ESCAPES = [
    r"plain",
    r"quote \" backslash \\ slash \/",
    r"\b\f\n\r\t",
    r"\u0000\u001f\u007f",
    r"\u00e9\u00C9\u20ac",
    r"\ud83d\ude00",  # surrogate pair -> U+1F600
    r"\uD83D\uDE00",  # upper-case hex
    r"a\ud834\udd1eb",  # U+1D11E between ASCII
    "\u00e9\u65e5\U0001f600",  # raw UTF-8 (2, 3, 4 bytes)
    r"mixed \u00e9" + "\u00e9",
]


@pytest.mark.parametrize("literal", ESCAPES)
def test_json_escapes_decode_exactly(literal):
    expected = json.loads('"' + literal + '"')
    rec, _ = feed_all("openai-chat", [(b'data: {"choices":[{"index":0,"delta":{"content":"' + literal.encode() + b'"}}]}\n\n', 1)], 2)
    assert rec.text == expected
    assert rec.output_chars.tolist() == ([len(expected)] if expected else [])


@pytest.mark.parametrize(
    "literal, expected",
    [
        (r"\ud83d", "\ufffd"),  # lone high surrogate
        (r"\ude00", "\ufffd"),  # lone low surrogate
        (r"x\ud83dy", "x\ufffdy"),
        (r"\ud83d\u0041", "\ufffdA"),  # high surrogate followed by a non-surrogate escape
        (r"\ude00\ud83d", "\ufffd\ufffd"),  # low then high: two lone surrogates
        (r"\ud83d\ud83d\ude00", "\ufffd\U0001f600"),
    ],
)
def test_lone_surrogates_become_replacement_characters(literal, expected):
    rec, _ = feed_all("openai-chat", [(b'data: {"choices":[{"index":0,"delta":{"content":"' + literal.encode() + b'"}}]}\n\n', 1)], 2)
    assert rec.text == expected
    assert rec.output_chars.tolist() == [len(expected)]


@pytest.mark.parametrize("raw", [b"\xff", b"a\xc3", b"\xe6\x97", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"ok\x80\x80ok"])
def test_invalid_utf8_in_a_string_is_replaced_like_python_does(raw):
    # pytps's JSON reader promises U+FFFD per maximal subpart, as bytes.decode("utf-8", "replace").
    body = b'data: {"choices":[{"index":0,"delta":{"content":"' + raw + b'"}}]}\n\n'
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.text == raw.decode("utf-8", "replace")


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=40), ascii_escapes=st.booleans())
def test_any_string_round_trips_and_counts_code_points(text, ascii_escapes):
    # st.text() draws no lone surrogates; with ensure_ascii, non-BMP characters become escaped pairs.
    literal = json.dumps(text, ensure_ascii=ascii_escapes).encode("utf-8")
    body = b'data: {"choices":[{"index":0,"delta":{"content":' + literal + b"}}]}\n\n"
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.text == text
    assert rec.output_chars.tolist() == [len(text)]


def test_output_chars_counts_code_points_not_bytes_or_utf16_units():
    pieces = ["a", "\u00e9", "\u65e5\u672c", "\U0001f600", "\U0001f44d\U0001f3fd", "e\u0301"]
    body = b"".join(chat_chunk({"content": p}) for p in pieces)
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.output_chars.tolist() == [1, 1, 2, 1, 2, 2]


def test_output_arrays_are_owned_numpy_arrays_with_the_contract_dtypes():
    body = chat_chunk({"content": "ab"}) + chat_chunk({"reasoning_content": "c"}) + DONE
    rec, _ = feed_all("openai-chat", [(body, 5)], 6)
    for name, dtype in [("output_times_ns", np.int64), ("output_kinds", np.uint8), ("output_chars", np.int32), ("output_tokens", np.int32)]:
        arr = getattr(rec, name)
        assert isinstance(arr, np.ndarray), name
        assert arr.dtype == dtype and arr.ndim == 1 and arr.shape == (2,), name
        if arr.flags.writeable:  # an owned copy: changing it must not change the recorder
            arr[:] = 99
            assert getattr(rec, name)[0] != 99, name
    empty = pytps.StreamRecorder("ollama")
    for name, dtype in [("output_times_ns", np.int64), ("output_kinds", np.uint8), ("output_chars", np.int32), ("output_tokens", np.int32)]:
        arr = getattr(empty, name)
        assert arr.dtype == dtype and arr.shape == (0,)


def test_feed_accepts_bytes_bytearray_and_memoryview():
    body = chat_chunk({"content": "hi"}) + DONE
    results = []
    for wrap in (bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b"--" + b + b"--"))[2:-2]):
        rec = pytps.StreamRecorder("openai-chat")
        assert rec.feed(wrap(body), 10) == 1
        rec.close(20)
        results.append(readouts(rec))
    assert all(r == results[0] for r in results)
    assert results[0]["text"] == "hi"


@pytest.mark.parametrize("bad", ["data: x\n\n", None, 5, [1, 2]])
def test_feed_rejects_non_buffers(bad):
    rec = pytps.StreamRecorder("openai-chat")
    # READING: the contract only says bytes/bytearray/memoryview; TypeError is Python's usual answer.
    with pytest.raises((TypeError, ValueError)):
        rec.feed(bad, 1)


def test_feed_after_close_raises_value_error():
    rec = pytps.StreamRecorder("openai-chat")
    rec.feed(chat_chunk({"content": "a"}), 1)
    rec.close(2)
    with pytest.raises(ValueError):
        rec.feed(chat_chunk({"content": "b"}), 3)
    assert rec.text == "a"


def test_reset_forgets_everything():
    rec = pytps.StreamRecorder("anthropic")
    rec.feed((CORPUS / "anthropic" / "doc_tool_use.txt").read_bytes(), 10)
    rec.close(20)
    assert rec.done and rec.output_events > 0
    rec.reset()
    assert rec.dialect == "anthropic"
    assert (rec.events, rec.output_events, rec.protocol_errors) == (0, 0, 0)
    assert rec.text == "" and rec.reasoning_text == "" and rec.tool_calls == [] and rec.usage == {}
    assert rec.finish_reason is None and rec.response_id is None and rec.model is None
    assert rec.done is False and rec.error is None
    assert rec.first_output_ns is None and rec.first_answer_ns is None and rec.last_output_ns is None and rec.end_ns is None
    assert len(rec.output_times_ns) == 0
    # usable again, including after close()
    basic = (CORPUS / "anthropic" / "doc_basic.txt").read_bytes()
    assert rec.feed(basic, 30) == 2
    assert rec.text == "Hello!" and rec.end_ns == 30


def test_reset_mid_event_drops_the_partial_event():
    rec = pytps.StreamRecorder("openai-chat")
    rec.feed(b'data: {"choices":[{"index":0,"delta":{"content":"stale', 1)
    rec.reset()
    rec.feed(chat_chunk({"content": "fresh"}), 2)
    rec.close(3)
    assert rec.text == "fresh" and rec.error is None and rec.events == 1


# ---- usage, finish_reason, response_id and model in every dialect --------------------------------

USAGE_CASES = {
    "openai-chat": (
        chat_chunk({}, "length")
        + chat_chunk(choices=False, usage={
            "prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 20, "audio_tokens": 0}})
        + DONE,
        {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150, "cached_tokens": 64, "reasoning_tokens": 20},
        "length", "chatcmpl-x", "m",
    ),
    "openai-completions": (
        b'data: {"id":"cmpl-1","object":"text_completion","model":"davinci","choices":[{"index":0,"text":"x","finish_reason":"stop"}]}\n\n'
        b'data: {"id":"cmpl-1","object":"text_completion","model":"davinci","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\n'
        + DONE,
        {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        "stop", "cmpl-1", "davinci",
    ),
    "openai-responses": (
        b'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_9","status":"in_progress","model":"gpt-x","usage":null}}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_9","status":"completed","model":"gpt-x",'
        b'"usage":{"input_tokens":300,"input_tokens_details":{"cached_tokens":256},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":32},"total_tokens":340}}}\n\n',
        {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340, "cached_tokens": 256, "reasoning_tokens": 32},
        "completed", "resp_9", "gpt-x",
    ),
    "anthropic": (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_9","type":"message","role":"assistant","content":[],"model":"claude-x",'
        b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":2000,"output_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"###"},"usage":{"output_tokens":42}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        # READING: direct mapping (prompt_tokens = input_tokens, which for Anthropic excludes cache reads).
        {"prompt_tokens": 10, "completion_tokens": 42, "cached_tokens": 2000},
        "stop_sequence", "msg_9", "claude-x",
    ),
    "ollama": (
        b'{"model":"llama3.2","created_at":"2024-01-01T00:00:00Z","message":{"role":"assistant","content":"x"},"done":false}\n'
        b'{"model":"llama3.2","created_at":"2024-01-01T00:00:01Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"length",'
        b'"total_duration":1,"load_duration":1,"prompt_eval_count":26,"prompt_eval_duration":1,"eval_count":290,"eval_duration":1}\n',
        {"prompt_tokens": 26, "completion_tokens": 290},
        "length", None, "llama3.2",
    ),
}


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_usage_is_normalized(dialect):
    body, usage, _, _, _ = USAGE_CASES[dialect]
    rec, _ = feed_all(dialect, [(body, 1)], 2)
    assert rec.usage == usage
    assert all(type(v) is int for v in rec.usage.values())


@pytest.mark.parametrize("dialect", ALL_DIALECTS)
def test_finish_reason_response_id_and_model(dialect):
    body, _, finish, rid, model = USAGE_CASES[dialect]
    rec, _ = feed_all(dialect, [(body, 1)], 2)
    assert (rec.finish_reason, rec.response_id, rec.model) == (finish, rid, model)
    assert rec.done


def test_usage_reports_overwrite_earlier_ones():
    # vLLM continuous_usage_stats: cumulative usage on every chunk; the last one stands.
    chunks = [
        (chat_chunk({"role": "assistant", "content": ""}, usage={"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7}), 10),
        (chat_chunk({"content": "ab"}, usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}), 20),
        (chat_chunk({"content": "c"}, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}), 30),
        (chat_chunk({"content": "def"}, usage={"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13}), 40),
    ]
    rec, _ = feed_all("openai-chat", chunks, 50)
    assert rec.usage == {"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13}
    assert rec.output_tokens.tolist() == [2, 1, 3]


@pytest.mark.parametrize("count", [2**31 + 1, 2**31 + 6, 2**40, 2**63 - 1])
def test_a_per_event_token_count_beyond_int32_is_a_protocol_error(count):
    # output_tokens is int32: a per-chunk usage jump that does not fit is not narrowed (it used to
    # wrap: 2**31 + 6 after 1 gave -2147483643) but rejects the event like malformed JSON would (docs/sse.md).
    chunks = [
        (chat_chunk({"content": "a"}, usage={"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}), 10),
        (chat_chunk({"content": "b"}, usage={"prompt_tokens": 7, "completion_tokens": count, "total_tokens": 8}), 20),
        (chat_chunk({"content": "c"}, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}), 30),
    ]
    rec, returns = feed_all("openai-chat", chunks, 40)
    assert rec.output_tokens.tolist() == [1, 2] and rec.text == "ac"
    assert returns == [1, 0, 1]
    assert rec.protocol_errors == 1
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 1
    assert "token" in rec.error["message"]
    assert rec.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_a_per_event_token_count_down_to_int32_min_is_kept():
    # A count that goes down (a server resetting its cumulative usage) fits and is kept as is.
    chunks = [
        (chat_chunk({"content": "a"}, usage={"completion_tokens": 2**31 - 1}), 10),
        (chat_chunk({"content": "b"}, usage={"completion_tokens": 2**31 - 1 + 2**31 - 1}), 20),
        (chat_chunk({"content": "c"}, usage={"completion_tokens": 2**31 - 1}), 30),
    ]
    rec, _ = feed_all("openai-chat", chunks, 40)
    assert rec.protocol_errors == 0
    assert rec.output_tokens.tolist() == [2**31 - 1, 2**31 - 1, -(2**31 - 1)]


def test_output_tokens_are_minus_one_without_per_chunk_usage():
    chunks = [(chat_chunk({"content": "a"}), 10), (chat_chunk({"content": "b"}), 20),
              (chat_chunk(choices=False, usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}) + DONE, 30)]
    rec, _ = feed_all("openai-chat", chunks, 40)
    assert rec.output_tokens.tolist() == [-1, -1]
    assert rec.usage == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


@pytest.mark.parametrize(
    "dialect, body, message, index",
    [
        ("openai-chat", chat_chunk({"content": "a"}) + b'data: {"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}\n\n' + DONE, "Internal server error", 1),
        ("anthropic", b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n', "Overloaded", 0),
        ("openai-responses", b'event: error\ndata: {"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}\n\n', "Something went wrong", 0),
        ("ollama", b'{"model":"m","response":"a","done":false}\n{"error":"model runner has unexpectedly stopped"}\n', "model runner has unexpectedly stopped", 1),
    ],
)
def test_in_stream_errors(dialect, body, message, index):
    rec, _ = feed_all(dialect, [(body, 1)], 2)
    err = rec.error
    assert err["kind"] == "in_stream" and err["event_index"] == index
    assert message in err["message"]
    framed, _ = frame_events(body, dialect)
    assert err["payload"] == framed[index][1]
    assert rec.protocol_errors == 0


def test_only_the_first_error_is_kept():
    body = b"data: {oops\n\n" + b'data: {"error": {"message": "later"}}\n\n' + b"data: {again\n\n"
    rec, _ = feed_all("openai-chat", [(body, 1)], 2)
    assert rec.error["kind"] == "protocol" and rec.error["event_index"] == 0
    assert rec.protocol_errors == 2
