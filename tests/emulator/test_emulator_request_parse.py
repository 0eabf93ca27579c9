"""The emulator's request parser resumes where the last read left it: a request costs about
one pass over its bytes however finely it arrives. The cost is counted (stats()["parse_bytes"]),
never timed."""

from __future__ import annotations

import socket
import time

import pytest
from emu_raw import Conn

import pytps


def _dribble(port: int, data: bytes, piece: int) -> Conn:
    c = Conn(port)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(0, len(data), piece):
        c.send_raw(data[i:i + piece])
        if (i // piece) % 8 == 7:
            time.sleep(0.0005)  # so that the emulator reads it in many pieces
    return c


@pytest.mark.parametrize("chunked", [False, True])
def test_a_large_body_in_small_pieces_is_parsed_in_one_pass(chunked):
    content = "word " * 40_000  # 200 kB
    body = (b'{"messages": [{"role": "user", "content": "' + content.encode() + b'"}], "stream": true, '
            b'"max_tokens": 1}')
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if chunked:
        pieces = [body[i:i + 1000] for i in range(0, len(body), 1000)]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        request = head + b"Transfer-Encoding: chunked\r\n\r\n" + payload
    else:
        request = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    with pytps.Emulator(ttft_ms=0.1, itl_us=10) as emu:
        before = emu.stats()["parse_bytes"]
        with _dribble(emu.port, request, 512) as c:
            assert c.read_response().status == 200
        work = emu.stats()["parse_bytes"] - before
        rec = emu.wait_truth(1)[0]
    assert rec["prompt_tokens"] > 50_000  # the whole body arrived and was read
    # About one pass: a parser that starts over at each read would examine the body once per
    # read (hundreds of times here).
    assert len(request) <= work <= 3 * len(request)


def test_a_head_in_single_bytes_is_scanned_once():
    body = b'{"messages": [{"role": "user", "content": "hi"}], "stream": true}'
    pads = "".join(f"X-Pad-{i}: {'p' * 60}\r\n" for i in range(100))
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{pads}Content-Length: {len(body)}\r\n\r\n"
               .encode() + body)
    with pytps.Emulator(ttft_ms=0.1, itl_us=10, default_output_tokens=1) as emu:
        before = emu.stats()["parse_bytes"]
        with _dribble(emu.port, request, 7) as c:
            assert c.read_response().status == 200
        work = emu.stats()["parse_bytes"] - before
    assert len(request) <= work <= 4 * len(request)


def test_split_requests_parse_the_same_wherever_they_split():
    body = b'{"messages": [{"role": "user", "content": "hello there"}], "stream": true, "max_tokens": 2}'
    chunked = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"a;ext=1\r\n" + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10) + body[10:]
               + b"\r\n0\r\nX-T: 1\r\n\r\n")
    with pytps.Emulator(ttft_ms=0.1, itl_us=10) as emu:
        for cut in range(1, len(chunked), 3):
            with Conn(emu.port) as c:
                c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c.send_raw(chunked[:cut])
                time.sleep(0.001)
                c.send_raw(chunked[cut:])
                assert c.read_response().status == 200
        recs = emu.wait_truth(len(range(1, len(chunked), 3)))
    assert {(r["prompt_tokens"], r["output_tokens"]) for r in recs} == {(recs[0]["prompt_tokens"], 2)}
