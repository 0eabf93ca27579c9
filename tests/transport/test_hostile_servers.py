"""Slow-loris and flood servers on 127.0.0.1, through every transport and the whole runner: each
request ends with the right error class in bounded time, and the client's memory stays under a
cap however much the server offers."""

from __future__ import annotations

import asyncio
import resource
import time

import pytest
from test_client_engine import SSE_HEAD, ScriptServer, drip, half_chunk

from pytps.runner.config import make_config
from pytps.runner.loop import Runner

TRANSPORTS = ("native", "asyncio", "httpx")
MEMORY_CAP_BYTES = 64 << 20  # growth of the process's peak RSS allowed for one hostile request
GIB = 1 << 30


def header_flood(conn, stop) -> None:
    """A status line, then one header that goes on for up to 1 GiB."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Flood: ")
    block = b"a" * 65536
    for _ in range(GIB // len(block)):
        if stop.is_set():
            return
        conn.sendall(block)


def endless_line(conn, stop) -> None:
    """A 200 event stream whose first data line never ends (up to 1 GiB)."""
    conn.sendall(SSE_HEAD)
    block = b"a" * 65536
    conn.sendall(b"%x\r\ndata: " % (len(block) + 6) + block + b"\r\n")
    for _ in range(GIB // len(block)):
        if stop.is_set():
            return
        conn.sendall(b"%x\r\n" % len(block) + block + b"\r\n")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def run_one(port: int, transport: str, tmp_path, *, read_timeout_s: float = 30.0, total_timeout_s: float = 600.0):
    cfg = make_config(f"http://127.0.0.1:{port}", model="m", requests=1, output_tokens=4, input_tokens=8,
                      transport=transport, timeout=read_timeout_s, out=tmp_path / transport)
    cfg.request_timeout_s = total_timeout_s
    t0 = time.monotonic()
    result = asyncio.run(Runner(cfg, keep_records=True).run())
    assert result.metadata["transport"] == transport
    return result.records[0], time.monotonic() - t0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_1_gib_header_is_cut_off_as_a_protocol_error(transport, tmp_path):
    rss0 = peak_rss_bytes()
    with ScriptServer(header_flood) as srv:
        rec, took_s = run_one(srv.port, transport, tmp_path)
    assert rec.error == "protocol", rec.error_detail
    assert took_s < 10
    assert peak_rss_bytes() - rss0 < MEMORY_CAP_BYTES


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_line_that_never_ends_is_cut_off_with_bounded_memory(transport, tmp_path):
    rss0 = peak_rss_bytes()
    with ScriptServer(endless_line) as srv:
        rec, took_s = run_one(srv.port, transport, tmp_path)
    # The overlong line is discarded as it streams (never buffered); the response cap that every
    # transport applies (256 MiB) ends the request before the server's 1 GiB does.
    assert rec.error == "client" and "max_response_bytes" in rec.error_detail, rec.error_detail
    assert rec.events == 0 and len(rec.output_times_ns) == 0
    assert took_s < 20
    assert peak_rss_bytes() - rss0 < MEMORY_CAP_BYTES


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_byte_a_second_ends_at_the_total_timeout(transport, tmp_path):
    with ScriptServer(drip) as srv:
        rec, took_s = run_one(srv.port, transport, tmp_path, read_timeout_s=5.0, total_timeout_s=2.0)
    assert rec.error == "timeout", rec.error_detail
    assert 1.5 < took_s < 6


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_chunk_that_never_ends_hits_the_idle_timeout(transport, tmp_path):
    with ScriptServer(half_chunk) as srv:
        rec, took_s = run_one(srv.port, transport, tmp_path, read_timeout_s=1.0)
    assert rec.error == "timeout", rec.error_detail
    assert 0.8 < took_s < 4


def reset_mid_body(conn, stop) -> None:
    """Two events of a 200 stream, then a TCP reset (SO_LINGER 0) instead of the rest."""
    import socket
    import struct

    event = b'data: {"id":"r","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    conn.sendall(SSE_HEAD + (b"%x\r\n" % len(event) + event + b"\r\n") * 2)
    time.sleep(0.05)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reset_mid_stream_is_truncated_with_the_events_before_it(transport, tmp_path):
    with ScriptServer(reset_mid_body) as srv:
        rec, took_s = run_one(srv.port, transport, tmp_path)
    assert rec.error == "truncated", rec.error_detail
    assert len(rec.output_times_ns) == 2 and rec.status == 200
    assert took_s < 5
