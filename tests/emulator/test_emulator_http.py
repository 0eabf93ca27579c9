"""HTTP/1.1 behaviour of the emulator, driven by raw sockets: keep-alive, pipelining,
chunked and 100-continue request bodies, HTTP/1.0, and the error responses of each API."""

from __future__ import annotations

import json

import pytest
from emu_raw import Conn, call

import pytps

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def emu():
    with pytps.Emulator(ttft_ms=1.0, itl_us=50.0, default_output_tokens=3) as e:
        yield e


def test_health_and_models(emu):
    r = call(emu.port, "GET", "/health")
    assert (r.status, r.json()) == (200, {"status": "ok"})
    r = call(emu.port, "GET", "/v1/models")
    assert r.json() == {"object": "list", "data": [{"id": "pytps-emulator", "object": "model", "created": 0,
                                                     "owned_by": "pytps"}]}


@pytest.mark.parametrize("path,expected", [
    ("/v1/nope", {"error": {"message": "Invalid URL (POST /v1/nope)", "type": "invalid_request_error",
                            "param": None, "code": "unknown_url"}}),
    ("/api/nope", {"error": "Invalid URL (POST /api/nope)"}),
])
def test_unknown_path_is_404_with_json(emu, path, expected):
    r = call(emu.port, "POST", path, {"x": 1})
    assert r.status == 404
    assert r.headers["content-type"] == "application/json"
    assert r.json() == expected


def test_wrong_method_is_405(emu):
    r = call(emu.port, "GET", "/v1/chat/completions")
    assert r.status == 405 and r.headers["allow"] == "POST"
    assert "error" in r.json()


@pytest.mark.parametrize("path,body,family,needle", [
    ("/v1/chat/completions", b'{"messages": [', "openai", "could not parse the JSON body"),
    ("/v1/chat/completions", b'{"model": "m"}', "openai", "Missing required parameter: 'messages'"),
    ("/v1/chat/completions", b'{"messages": "hi"}', "openai", "expected an array"),
    ("/v1/chat/completions", b'{"messages": [], "stream": "yes"}', "openai", "'stream'"),
    ("/v1/chat/completions", b'{"messages": [], "max_tokens": 0}', "openai", "positive integer"),
    ("/v1/chat/completions", b'{"messages": [], "stream_options": {"include_usage": true}}', "openai", "only allowed when 'stream'"),
    ("/v1/completions", b'[1, 2]', "openai", "JSON object"),
    ("/v1/responses", b'{"input": 3}', "openai", "'input'"),
    ("/v1/messages", b'{"messages": []}', "anthropic", "max_tokens: Field required"),
    ("/v1/messages", b'{"messages": [], "max_tokens": 5,}', "anthropic", "could not parse"),
    ("/api/chat", b'{"messages": [}', "ollama", "could not parse"),
    ("/api/generate", b'', "ollama", "empty"),
    # The body routes open their requests the same way.
    ("/v1/embeddings", b'', "openai", "empty"),
    ("/v1/embeddings", b'{"input": [', "openai", "could not parse the JSON body"),
    ("/v1/embeddings", b'{"input": "a", "model": 3}', "openai", "Invalid type for 'model'"),
    ("/v1/rerank", b'"query"', "openai", "JSON object"),
    ("/api/embed", b'{"input": ["a"],}', "ollama", "could not parse"),
])
def test_malformed_bodies_are_400_in_the_api_format(emu, path, body, family, needle):
    with Conn(emu.port) as c:
        c.send("POST", path, body)
        r = c.read_response()
        assert r.status == 400
        err = r.json()
        if family == "openai":
            assert set(err["error"]) == {"message", "type", "param", "code"}
            assert err["error"]["type"] == "invalid_request_error"
            msg = err["error"]["message"]
        elif family == "anthropic":
            assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
            msg = err["error"]["message"]
        else:
            msg = err["error"]
        assert needle in msg
        # The connection survives a 400.
        c.send("GET", "/health")
        assert c.read_response().status == 200


def test_keep_alive_across_requests_and_apis(emu):
    with Conn(emu.port) as c:
        ids = []
        for path, body in [("/v1/chat/completions", {"messages": MSG, "stream": True}),
                           ("/v1/messages", {"messages": MSG, "stream": True, "max_tokens": 2}),
                           ("/api/chat", {"messages": MSG}),
                           ("/v1/chat/completions", {"messages": MSG}),
                           ("/v1/responses", {"input": "x", "stream": True})]:
            c.send("POST", path, body)
            r = c.read_response()
            assert r.status == 200 and r.complete
            assert "connection" not in r.headers
            ids.append(r.headers["x-request-id"])
        assert len(set(ids)) == 5
    stats = emu.stats()
    assert stats["connections_accepted"] >= 1


def test_pipelined_requests_are_answered_in_order(emu):
    with Conn(emu.port) as c:
        reqs = b"".join(c.request_bytes("POST", "/v1/chat/completions",
                                        json.dumps({"messages": MSG, "stream": True, "max_tokens": n}).encode())
                        for n in (1, 2, 3))
        c.send_raw(reqs + c.request_bytes("GET", "/health"))
        counts = []
        for _ in range(3):
            r = c.read_response()
            counts.append(sum(1 for _, d in r.sse_json() if d["choices"][0]["delta"].get("content")))
        assert counts == [1, 2, 3]
        assert c.read_response().json() == {"status": "ok"}


def test_connection_close_is_honoured(emu):
    with Conn(emu.port) as c:
        c.send("POST", "/v1/chat/completions", {"messages": MSG, "stream": True}, headers={"Connection": "close"})
        r = c.read_response()
        assert r.complete and r.headers["connection"] == "close"
        assert c.closed_by_peer()


def test_http_1_0_gets_a_raw_body_then_close(emu):
    with Conn(emu.port) as c:
        c.send("POST", "/v1/chat/completions", {"messages": MSG, "stream": True}, version="HTTP/1.0")
        r = c.read_response()
        assert "transfer-encoding" not in r.headers
        assert r.body.endswith(b"data: [DONE]\n\n")


def test_chunked_request_body(emu):
    body = json.dumps({"messages": MSG, "stream": True, "max_tokens": 2}).encode()
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/json\r\n\r\n")
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    with Conn(emu.port) as c:
        c.send_raw(head + chunked + b"0\r\n\r\n")
        r = c.read_response()
        assert r.status == 200
        assert r.sse()[-1] == (None, "[DONE]")


def test_expect_100_continue(emu):
    body = json.dumps({"messages": MSG, "max_tokens": 2}).encode()
    with Conn(emu.port) as c:
        c.send_raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body))
        assert c.read_response().status == 100
        c.send_raw(body)
        r = c.read_response()
        assert r.status == 200 and r.json()["usage"]["completion_tokens"] == 2


@pytest.mark.parametrize("raw,status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /health HTTP/2.0\r\n\r\n", 505),
    (b"POST /v1/completions HTTP/1.1\r\nContent-Length: nope\r\n\r\n", 400),
    (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
])
def test_broken_http_gets_an_error_and_close(emu, raw, status):
    with Conn(emu.port) as c:
        c.send_raw(raw)
        r = c.read_response()
        assert r.status == status
        assert r.headers["connection"] == "close"
        assert "error" in r.json()
        assert c.closed_by_peer()


def test_request_split_across_many_writes(emu):
    with Conn(emu.port) as c:
        data = c.request_bytes("POST", "/v1/completions", json.dumps({"prompt": "x", "stream": True}).encode())
        for i in range(len(data)):
            c.send_raw(data[i:i + 1])
        r = c.read_response()
        assert r.status == 200 and r.sse()[-1] == (None, "[DONE]")
