"""Every fault the emulator injects, seen from a raw socket and from the truth records."""

from __future__ import annotations

import json

import pytest
from emu_raw import Conn, call

import pytps

MSG = [{"role": "user", "content": "hi"}]
CHAT = {"messages": MSG, "stream": True}


def _emu(fault, **kw):
    settings = dict(ttft_ms=1.0, itl_us=100.0, default_output_tokens=6, faults=[fault])
    settings.update(kw)
    return pytps.Emulator(**settings)


@pytest.mark.parametrize("kind,status,family_check", [
    ("http_429", 429, lambda e: e["error"]["code"] == "rate_limit_exceeded"),
    ("http_500", 500, lambda e: e["error"]["type"] == "server_error"),
    ("http_503", 503, lambda e: e["error"]["type"] == "server_error"),
])
def test_http_error_faults(kind, status, family_check):
    with _emu({"kind": kind, "every": 1, "retry_after_s": 7}) as emu:
        with Conn(emu.port) as c:
            c.send("POST", "/v1/chat/completions", CHAT)
            r = c.read_response()
            assert r.status == status
            assert family_check(r.json())
            if status == 429:
                assert r.headers["retry-after"] == "7"
            # Keep-alive survives an error response.
            c.send("GET", "/health")
            assert c.read_response().status == 200
        t = emu.wait_truth(1)[0]
    assert (t["status"], t["fault"], t["output_tokens"], len(t["sent_ns"])) == (status, kind, 0, 0)


def test_429_in_anthropic_and_ollama_formats():
    with _emu("429:every=1") as emu:
        a = call(emu.port, "POST", "/v1/messages", {**CHAT, "max_tokens": 3})
        o = call(emu.port, "POST", "/api/chat", {"messages": MSG})
    assert a.status == 429 and a.json()["error"]["type"] == "rate_limit_error"
    assert o.status == 429 and "Rate limit" in o.json()["error"]


def test_disconnect_mid_stream():
    with _emu({"kind": "disconnect", "every": 1, "after_events": 2}) as emu:
        with Conn(emu.port) as c:
            c.send("POST", "/v1/chat/completions", CHAT)
            r = c.read_response()
            assert r.status == 200
            assert not r.complete  # no terminating chunk
            assert b"[DONE]" not in r.body
            contents = [d["choices"][0]["delta"].get("content") for _, d in r.sse_json()]
            assert contents == ["", " the", " token"]
        t = emu.wait_truth(1)[0]
    assert t["fault"] == "disconnect" and not t["completed"] and not t["client_closed"]
    assert t["tokens"].tolist() == [1, 1] and t["output_tokens"] == 2 and t["planned_events"] == 6


def test_malformed_event_then_the_stream_goes_on():
    with _emu("malformed_json:every=1,after=3") as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    bad = []
    for _, data in r.sse():
        if data == "[DONE]":
            continue
        try:
            json.loads(data)
        except json.JSONDecodeError:
            bad.append(data)
    assert len(bad) == 1
    assert r.sse()[-1] == (None, "[DONE]")
    # The malformed event comes right before the 4th token event and carries no token.
    datas = [d for _, d in r.sse()]
    assert datas.index(bad[0]) == 4
    assert t["completed"] and t["output_tokens"] == 6 and t["fault"] == "malformed_json"


@pytest.mark.parametrize("path,body,check", [
    ("/v1/chat/completions", CHAT, lambda r: json.loads(r.sse()[-1][1])["error"]["type"] == "server_error"),
    ("/v1/messages", {**CHAT, "max_tokens": 6},
     lambda r: r.sse()[-1] == ("error", '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')),
    ("/v1/responses", {"input": "x", "stream": True}, lambda r: r.sse_json()[-1][0] == "error"
     and r.sse_json()[-1][1]["code"] == "server_error"),
    ("/api/generate", {"prompt": "x"}, lambda r: "error" in r.ndjson()[-1]),
])
def test_error_event_in_each_format(path, body, check):
    with _emu({"kind": "error_event", "every": 1, "after_events": 2}) as emu:
        with Conn(emu.port) as c:
            c.send("POST", path, body)
            r = c.read_response()
            assert r.status == 200 and r.complete
            assert check(r)
            assert b"[DONE]" not in r.body
            c.send("GET", "/health")  # the HTTP exchange ended cleanly
            assert c.read_response().status == 200
        t = emu.wait_truth(1)[0]
    assert t["fault"] == "error_event" and not t["completed"] and t["output_tokens"] == 2


def test_stall_shifts_the_rest_of_the_schedule():
    with _emu("stall:every=1,after=3,seconds=0.2") as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    assert r.complete and t["completed"]
    gaps = (t["scheduled_ns"][1:] - t["scheduled_ns"][:-1]).tolist()
    assert gaps == [100_000, 100_000, 200_100_000, 100_000, 100_000]
    # The 4th write leaves at least the stall after the 3rd was due (measured from the 3rd's due
    # time, not its write: a write made late by a busy machine would shorten the gap it starts).
    assert t["sent_ns"][3] - t["scheduled_ns"][2] >= 200_000_000


def test_slow_headers():
    with _emu("slow_headers:every=1,seconds=0.15") as emu:
        call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    assert t["headers_sent_ns"] - t["received_ns"] >= 150_000_000
    assert t["scheduled_ns"][0] - t["received_ns"] == 151_000_000


def test_every_nth_and_first_matching_spec_wins():
    faults = ["500:every=3", "429:every=2"]
    with pytps.Emulator(ttft_ms=0, itl_us=10, default_output_tokens=1, faults=faults) as emu:
        statuses = [call(emu.port, "POST", "/v1/chat/completions", CHAT).status for _ in range(6)]
    assert statuses == [200, 429, 500, 429, 200, 500]


def test_probability_faults_follow_the_seed():
    def run(seed):
        with pytps.Emulator(ttft_ms=0, itl_us=10, default_output_tokens=1, seed=seed,
                            faults=[{"kind": "http_503", "probability": 0.5}]) as emu:
            return [call(emu.port, "POST", "/v1/completions", {"prompt": "x"}).status for _ in range(24)]

    a, b, c = run(1), run(1), run(2)
    assert a == b
    assert a != c
    assert 0 < a.count(503) < 24


def test_disconnect_with_stream_false_sends_no_body():
    with _emu("disconnect:every=1") as emu:
        with Conn(emu.port) as c:
            c.send("POST", "/v1/chat/completions", {"messages": MSG})
            with pytest.raises(ConnectionError):
                c.read_response()
        t = emu.wait_truth(1)[0]
    assert not t["completed"] and t["output_tokens"] == 0


# Whole bodies: embeddings, rerank and stream: false. No event to carry an in-stream error, so an
# error_event is the server's 500; malformed JSON is the body cut short.
EMBED = ("/v1/embeddings", {"input": ["a b c", "d e"]})
RERANK = ("/v1/rerank", {"query": "q", "documents": ["a", "b", "c"]})
NO_STREAM = ("/v1/chat/completions", {"messages": MSG})


@pytest.mark.parametrize("path,body", [EMBED, RERANK, NO_STREAM], ids=["embeddings", "rerank", "no-stream"])
@pytest.mark.parametrize("fault,status,kind", [("429:every=1", 429, "http_429"), ("500:every=1", 500, "http_500"),
                                               ("503:every=1", 503, "http_503"), ("error:every=1", 500, "error_event")])
def test_whole_body_routes_are_refused_by_http_faults(path, body, fault, status, kind):
    with _emu(fault) as emu:
        with Conn(emu.port) as c:
            c.send("POST", path, body)
            r = c.read_response()
            assert r.status == status and "error" in r.json()
            # Keep-alive survives an error response.
            c.send("GET", "/health")
            assert c.read_response().status == 200
        t = emu.wait_truth(1)[0]
    assert (t["status"], t["fault"]) == (status, kind)


@pytest.mark.parametrize("path,body", [EMBED, RERANK, NO_STREAM], ids=["embeddings", "rerank", "no-stream"])
def test_whole_body_faults_in_the_body(path, body):
    with _emu("malformed:every=1") as emu:
        r = call(emu.port, "POST", path, body)
        assert r.status == 200 and int(r.headers["content-length"]) == len(r.body)
        with pytest.raises(json.JSONDecodeError):
            json.loads(r.body)
    with _emu("disconnect:every=1") as emu:
        with Conn(emu.port) as c:
            c.send("POST", path, body)
            with pytest.raises(ConnectionError):
                c.read_response()
        assert not emu.wait_truth(1)[0]["completed"]
    with _emu("slow_headers:every=1,seconds=0.1") as emu:
        assert call(emu.port, "POST", path, body).status == 200
        t = emu.wait_truth(1)[0]
    assert t["headers_sent_ns"] - t["received_ns"] >= 100_000_000
