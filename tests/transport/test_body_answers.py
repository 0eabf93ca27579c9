"""Issue 40, defect 15 (whole bodies): an embedding holding NaN or an infinity, or of another length
than --dimensions asked for, is a protocol error (it counted as a success); and the errors of a
request that asked for one response body (--no-stream, embeddings) say "response body", not "event
stream". Raw servers on 127.0.0.1, on every transport."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import struct
from pathlib import Path
from typing import Any

import pytest
from fault_servers import FaultServer, Reader, Request, read_body

import pytps
from pytps.results.folder import load_journal

TRANSPORTS = ["native", "asyncio", "httpx"]


def json_answer(body: bytes, extra: bytes = b"") -> Any:
    def handler(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        if not read_body(reader, req):
            return False
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra
                     + b"Content-Length: %d\r\n\r\n" % len(body) + body)  # fmt: skip
        return True

    return handler


def embeddings_body(vector: Any) -> bytes:
    return json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": vector}],
                       "model": "m", "usage": {"prompt_tokens": 4, "total_tokens": 4}}).encode()  # fmt: skip


def run_against(url: str, out: Path, **settings: Any) -> list[dict[str, Any]]:
    pytps.run(url, model="m", out=out, requests=2, concurrency=1, store=False, **settings)
    return load_journal(out)


NAN_B64 = base64.b64encode(struct.pack("<4f", 0.1, float("nan"), 0.2, 0.3)).decode()


@pytest.mark.parametrize(
    ("vector", "why"),
    [
        ([0.1, float("nan"), 0.3, 0.4], "NaN or an infinity"),
        ([0.1, float("inf"), 0.3, 0.4], "NaN or an infinity"),
        ([0.1, -float("inf"), 0.3, 0.4], "NaN or an infinity"),
        (NAN_B64, "NaN or an infinity"),
    ],
)
def test_nan_or_infinite_embeddings_are_protocol_errors(tmp_path: Path, vector: Any, why: str) -> None:
    # json.dumps writes NaN and Infinity as Python's parser reads them back.
    with FaultServer(json_answer(embeddings_body(vector))) as srv:
        lines = run_against(srv.url, tmp_path / "r", api="openai-embeddings")
    assert len(lines) == 2
    for line in lines:
        assert line["error"] == "protocol" and why in line["error_detail"], line


def test_embeddings_of_another_length_than_dimensions_asked_are_protocol_errors(tmp_path: Path) -> None:
    with FaultServer(json_answer(embeddings_body([0.5] * 8))) as srv:
        lines = run_against(srv.url, tmp_path / "r", api="openai-embeddings", dimensions=16)
        ok = run_against(srv.url, tmp_path / "ok", api="openai-embeddings", dimensions=8)
    assert {line["error"] for line in lines} == {"protocol"}
    assert lines[0]["error_detail"] == "embeddings of 8 components where --dimensions asked for 16"
    assert {line["error"] for line in ok} == {None}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("what", ["no-stream", "embeddings"])
def test_body_errors_say_response_body_not_event_stream(tmp_path: Path, transport: str, what: str) -> None:
    body = embeddings_body([0.5] * 4) if what == "embeddings" else json.dumps(
        {"id": "x", "object": "chat.completion", "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    ).encode()  # fmt: skip
    settings: dict[str, Any] = {"api": "openai-embeddings"} if what == "embeddings" else {"stream": False}
    with FaultServer(json_answer(gzip.compress(body), b"Content-Encoding: gzip\r\n")) as srv:
        lines = run_against(srv.url, tmp_path / "r", transport=transport, **settings)
    for line in lines:
        assert line["error"] == "protocol", line
        assert "response body compressed" in line["error_detail"] and "stream" not in line["error_detail"], line
