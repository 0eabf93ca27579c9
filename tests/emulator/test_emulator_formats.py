"""Byte-exact streams and bodies of every API the emulator serves, against a corpus of
expected bytes (tests/emulator_corpus/*.txt, checked by hand against the providers' documented
examples), plus the format rules that hold whatever the settings: role chunk, usage chunk only
when asked, per-chunk usage, [DONE], event names and order, sequence numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from emu_raw import call, normalize

import pytps

CORPUS = Path(__file__).parent.parent / "emulator_corpus"
REGEN = os.environ.get("PYTPS_REGEN_CORPUS") == "1"

MSG = [{"role": "user", "content": "Say hello to the token stream"}]  # "user" + 29 chars: 9 prompt tokens
TOOLS_OPENAI = [{"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object"}}}]
TOOLS_FLAT = [{"type": "function", "name": "get_current_weather", "parameters": {"type": "object"}}]
TOOLS_ANTHROPIC = [{"name": "get_current_weather", "input_schema": {"type": "object"}}]

FAST = dict(ttft_ms=1.0, itl_us=100.0, default_output_tokens=3)

# name -> (emulator settings, path, request body)
CASES = {
    "chat_stream": ({}, "/v1/chat/completions", {"model": "gpt-4o-mini", "messages": MSG, "stream": True}),
    "chat_stream_usage": ({}, "/v1/chat/completions",
                          {"model": "gpt-4o-mini", "messages": MSG, "stream": True,
                           "stream_options": {"include_usage": True}}),
    "chat_stream_continuous_usage": ({}, "/v1/chat/completions",
                                     {"model": "m", "messages": MSG, "stream": True,
                                      "stream_options": {"include_usage": True, "continuous_usage_stats": True}}),
    "chat_stream_reasoning": ({"reasoning_tokens": 2}, "/v1/chat/completions",
                              {"model": "m", "messages": MSG, "stream": True, "max_tokens": 4}),
    "chat_stream_tool": ({"tool_calls": True}, "/v1/chat/completions",
                         {"model": "m", "messages": MSG, "stream": True, "tools": TOOLS_OPENAI}),
    "chat_body": ({"reasoning_tokens": 1}, "/v1/chat/completions", {"model": "m", "messages": MSG}),
    "completions_stream": ({}, "/v1/completions",
                           {"model": "gpt-3.5-turbo-instruct", "prompt": "Say hello", "stream": True,
                            "stream_options": {"include_usage": True}}),
    "completions_body": ({}, "/v1/completions", {"model": "gpt-3.5-turbo-instruct", "prompt": "Say hello", "max_tokens": 2}),
    "responses_stream": ({}, "/v1/responses", {"model": "gpt-4.1", "input": "Say hello", "stream": True}),
    "responses_stream_reasoning_tool": ({"reasoning_tokens": 1, "tool_calls": True}, "/v1/responses",
                                        {"model": "o4-mini", "input": "Say hello", "stream": True, "tools": TOOLS_FLAT}),
    "responses_body": ({}, "/v1/responses", {"model": "gpt-4.1", "input": "Say hello", "max_output_tokens": 3}),
    "messages_stream": ({"max_output_tokens": 3}, "/v1/messages",
                        {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": MSG, "stream": True}),
    "messages_stream_thinking": ({"reasoning_tokens": 2}, "/v1/messages",
                                 {"model": "claude-sonnet-4-5", "max_tokens": 4, "messages": MSG, "stream": True}),
    "messages_stream_tool": ({"tool_calls": True, "max_output_tokens": 3}, "/v1/messages",
                             {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": MSG, "stream": True,
                              "tools": TOOLS_ANTHROPIC}),
    "messages_body": ({"max_output_tokens": 3}, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": MSG}),
    "ollama_chat_stream": ({}, "/api/chat", {"model": "llama3.2", "messages": MSG}),
    "ollama_generate_stream_thinking": ({"reasoning_tokens": 1}, "/api/generate",
                                        {"model": "qwen3", "prompt": "Say hello"}),
    "ollama_chat_body": ({}, "/api/chat", {"model": "llama3.2", "messages": MSG, "stream": False}),
}


def _run(settings, path, body):
    with pytps.Emulator(**{**FAST, **settings}) as emu:
        resp = call(emu.port, "POST", path, body)
        truth = emu.wait_truth(1)
    return resp, truth


@pytest.mark.parametrize("name", sorted(CASES))
def test_bytes_match_corpus(name):
    settings, path, body = CASES[name]
    resp, truth = _run(settings, path, body)
    assert resp.status == 200
    assert resp.complete
    got = normalize(resp.body)
    f = CORPUS / f"{name}.txt"
    if REGEN:
        f.write_bytes(got)
    assert got == f.read_bytes(), f"{name}: stream differs from the corpus"
    # The id the body carries is the one the truth and the header name.
    rid = resp.headers["x-request-id"]
    assert [r["id"] for r in truth] == [rid]
    if not path.startswith("/api/"):
        assert rid.encode() in resp.body


def test_stream_content_types():
    with pytps.Emulator(**FAST) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True})
        assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert r.headers["transfer-encoding"] == "chunked"
        r = call(emu.port, "POST", "/api/chat", {"messages": MSG})
        assert r.headers["content-type"] == "application/x-ndjson"
        r = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG})
        assert r.headers["content-type"] == "application/json"
        assert int(r.headers["content-length"]) == len(r.body)


def test_chat_usage_rules():
    with pytps.Emulator(**{**FAST, "default_output_tokens": 5}) as emu:
        plain = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True})
        usage = call(emu.port, "POST", "/v1/chat/completions",
                     {"messages": MSG, "stream": True, "stream_options": {"include_usage": True}})
        cont = call(emu.port, "POST", "/v1/chat/completions",
                    {"messages": MSG, "stream": True, "stream_options": {"continuous_usage_stats": True}})
    # Without include_usage: no usage member anywhere, [DONE] last.
    assert plain.sse()[-1] == (None, "[DONE]")
    chunks = [d for _, d in plain.sse_json()]
    assert all("usage" not in c for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == " the token stream moves at"
    # include_usage: usage null on every chunk but one last chunk with choices [] and the counts.
    chunks = [d for _, d in usage.sse_json()]
    assert usage.sse()[-1] == (None, "[DONE]")
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
    # continuous_usage_stats alone: a running usage on every chunk and no usage-only chunk.
    chunks = [d for _, d in cont.sse_json()]
    assert all(c["choices"] for c in chunks)
    assert [c["usage"]["completion_tokens"] for c in chunks] == [0, 1, 2, 3, 4, 5, 5]
    assert all(c["usage"]["total_tokens"] == 9 + c["usage"]["completion_tokens"] for c in chunks)


def test_tokens_per_event_and_counts():
    with pytps.Emulator(**{**FAST, "tokens_per_event": 3}) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions",
                 {"messages": MSG, "stream": True, "max_tokens": 7, "stream_options": {"include_usage": True}})
        truth = emu.wait_truth(1)[0]
    chunks = [d for _, d in r.sse_json()]
    pieces = [c["choices"][0]["delta"]["content"] for c in chunks if c["choices"] and "content" in c["choices"][0]["delta"]]
    pieces = pieces[1:]  # the role chunk's empty content
    assert [len(p.split()) for p in pieces] == [3, 3, 1]
    assert truth["tokens"].tolist() == [3, 3, 1]
    assert chunks[-1]["usage"]["completion_tokens"] == 7 == truth["output_tokens"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"


def test_output_length_rules():
    with pytps.Emulator(**{**FAST, "max_output_tokens": 6, "default_output_tokens": 4}) as emu:
        def n_tokens(body):
            call(emu.port, "POST", "/v1/chat/completions", body)
            return emu.wait_truth(1) and emu.truth(clear=True)[0]["output_tokens"]

        assert n_tokens({"messages": MSG, "stream": True}) == 4
        assert n_tokens({"messages": MSG, "stream": True, "max_tokens": 2}) == 2
        assert n_tokens({"messages": MSG, "stream": True, "max_completion_tokens": 3, "max_tokens": 5}) == 3
        assert n_tokens({"messages": MSG, "stream": True, "max_tokens": 100}) == 6  # capped
        call(emu.port, "POST", "/v1/responses", {"input": "x", "stream": True, "max_output_tokens": 5})
        assert emu.wait_truth(1) and emu.truth(clear=True)[0]["output_tokens"] == 5
        call(emu.port, "POST", "/api/generate", {"prompt": "x", "options": {"num_predict": 3}})
        assert emu.wait_truth(1) and emu.truth(clear=True)[0]["output_tokens"] == 3
        call(emu.port, "POST", "/api/generate", {"prompt": "x", "options": {"num_predict": -1}})
        assert emu.wait_truth(1) and emu.truth(clear=True)[0]["output_tokens"] == 4


def test_prompt_token_estimate():
    with pytps.Emulator(**FAST) as emu:
        body = {"system": "abcd", "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 37}]}],
                "max_tokens": 2, "stream": True}
        r = call(emu.port, "POST", "/v1/messages", body)
        start = r.sse_json()[0][1]
    # Every string value under messages/system: "abcd" + "user" + "text" + 37 x = 49 chars -> ceil(49/4) = 13.
    assert start["message"]["usage"]["input_tokens"] == 13


def test_responses_event_order_and_sequence():
    with pytps.Emulator(**{**FAST, "reasoning_tokens": 2, "default_output_tokens": 5}) as emu:
        r = call(emu.port, "POST", "/v1/responses", {"input": "hi", "stream": True})
    events = r.sse_json()
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert all(name == d["type"] for name, d in events)
    names = [n for n, _ in events]
    assert names == (["response.created", "response.in_progress",
                      "response.output_item.added", "response.content_part.added"]
                     + ["response.reasoning_text.delta"] * 2
                     + ["response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
                        "response.output_item.added", "response.content_part.added"]
                     + ["response.output_text.delta"] * 3
                     + ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                        "response.completed"])
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    done = [d for n, d in events if n == "response.output_text.done"][0]
    assert done["text"] == text
    final = events[-1][1]["response"]
    assert final["status"] == "completed"
    assert final["usage"]["output_tokens"] == 5
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == 2
    assert final["output"][1]["content"][0]["text"] == text
    assert b"[DONE]" not in r.body


def test_responses_incomplete_at_limit():
    with pytps.Emulator(**FAST) as emu:
        r = call(emu.port, "POST", "/v1/responses", {"input": "hi", "stream": True, "max_output_tokens": 2})
    name, final = r.sse_json()[-1]
    assert name == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_anthropic_event_order_and_stop_reasons():
    with pytps.Emulator(**{**FAST, "reasoning_tokens": 1, "max_output_tokens": 5}) as emu:
        r = call(emu.port, "POST", "/v1/messages", {"max_tokens": 3, "messages": MSG, "stream": True})
        r2 = call(emu.port, "POST", "/v1/messages", {"max_tokens": 10, "messages": MSG, "stream": True})
    names = [n for n, _ in r.sse_json()]
    assert names == ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
                     "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    events = r.sse_json()
    assert events[4][1]["delta"]["type"] == "signature_delta"
    assert events[-2][1]["delta"]["stop_reason"] == "max_tokens"
    assert events[-2][1]["usage"]["output_tokens"] == 3
    # Below the request's limit (the emulator's cap was lower): a natural end.
    assert r2.sse_json()[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert r2.sse_json()[-2][1]["usage"]["output_tokens"] == 5


def test_opening_events_go_out_at_once_and_blocks_open_with_their_first_token():
    with pytps.Emulator(**{**FAST, "tool_calls": True}) as emu:
        a = call(emu.port, "POST", "/v1/messages", {"messages": MSG, "stream": True, "max_tokens": 3})
        r = call(emu.port, "POST", "/v1/responses", {"input": "x", "stream": True})
        c = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True})
    assert a.chunks[0].startswith(b"event: message_start\n") and a.chunks[0].count(b"event: ") == 1
    assert a.chunks[1].split(b"\n")[0::3][:3] == [b"event: content_block_start", b"event: ping",
                                                  b"event: content_block_delta"]
    assert r.chunks[0].count(b"event: ") == 2  # response.created, response.in_progress
    assert r.chunks[1].startswith(b"event: response.output_item.added\n")
    assert b'"role":"assistant"' in c.chunks[0] and b"tool_calls" not in c.chunks[0]


def test_tool_call_arguments_are_json():
    with pytps.Emulator(**{**FAST, "tool_calls": True, "default_output_tokens": 6, "max_output_tokens": 6}) as emu:
        chat = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True, "tools": TOOLS_OPENAI})
        ant = call(emu.port, "POST", "/v1/messages", {"messages": MSG, "stream": True, "max_tokens": 50})
        resp = call(emu.port, "POST", "/v1/responses", {"input": "x", "stream": True, "tools": TOOLS_FLAT})
        body = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "tools": TOOLS_OPENAI})
    deltas = [c["choices"][0]["delta"] for _, c in chat.sse_json()][1:-1]
    assert deltas[0]["tool_calls"][0]["function"]["name"] == "get_current_weather"
    args = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas)
    assert json.loads(args) == {"q": "token stream moves at "}
    assert chat.sse_json()[-1][1]["choices"][0]["finish_reason"] == "tool_calls"
    partial = "".join(d["delta"]["partial_json"] for n, d in ant.sse_json() if n == "content_block_delta")
    assert json.loads(partial) == json.loads(args)
    assert ant.sse_json()[1][1]["content_block"]["name"] == "get_weather"  # no tools in the request: a default name
    assert ant.sse_json()[-2][1]["delta"]["stop_reason"] == "tool_use"
    fc = "".join(d["delta"] for n, d in resp.sse_json() if n == "response.function_call_arguments.delta")
    assert json.loads(fc) == json.loads(args)
    msg = body.json()["choices"][0]["message"]
    assert msg["content"] is None and json.loads(msg["tool_calls"][0]["function"]["arguments"]) == json.loads(args)


def test_ollama_final_object():
    with pytps.Emulator(**{**FAST, "default_output_tokens": 4}) as emu:
        r = call(emu.port, "POST", "/api/chat", {"model": "llama3.2", "messages": MSG})
        r2 = call(emu.port, "POST", "/api/generate", {"model": "llama3.2", "prompt": "hi", "options": {"num_predict": 2}})
    objs = r.ndjson()
    assert [o["done"] for o in objs] == [False] * 4 + [True]
    final = objs[-1]
    assert final["eval_count"] == 4 and final["prompt_eval_count"] == 9 and final["done_reason"] == "stop"
    assert final["total_duration"] >= final["eval_duration"] >= 0
    assert all(o["created_at"].endswith("Z") for o in objs)
    assert r2.ndjson()[-1]["done_reason"] == "length"
    assert "".join(o["response"] for o in r2.ndjson()) == " the token"


def test_stream_and_body_carry_the_same_text():
    with pytps.Emulator(**{**FAST, "default_output_tokens": 9}) as emu:
        s = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True})
        b = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG})
        sa = call(emu.port, "POST", "/v1/messages", {"messages": MSG, "stream": True, "max_tokens": 100})
        ba = call(emu.port, "POST", "/v1/messages", {"messages": MSG, "max_tokens": 100})
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for _, c in s.sse_json())
    assert b.json()["choices"][0]["message"]["content"] == streamed
    assert b.json()["usage"]["completion_tokens"] == 9
    streamed = "".join(d["delta"].get("text", "") for n, d in sa.sse_json() if n == "content_block_delta")
    assert ba.json()["content"][0]["text"] == streamed


def test_keepalive_comments_and_pings():
    with pytps.Emulator(ttft_ms=120, itl_us=100, default_output_tokens=2, keepalive_ms=25) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", {"messages": MSG, "stream": True})
        a = call(emu.port, "POST", "/v1/messages", {"messages": MSG, "stream": True, "max_tokens": 2})
        truth = emu.wait_truth(2)
    assert r.body.count(b": keep-alive\n\n") >= 2
    assert [k for k in r.chunks if k == b": keep-alive\n\n"]  # each keep-alive is its own write
    assert [n for n, _ in a.sse_json()].count("ping") >= 3
    assert all(t["keepalives"] >= 2 for t in truth)
    # The stream is otherwise unchanged: keep-alives carry no tokens.
    assert "".join(c["choices"][0]["delta"].get("content", "") for _, c in r.sse_json()) == " the token"
