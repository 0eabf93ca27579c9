"""HttpStreamRecorder: the HTTP/1.1 response parser (framing, limits, errors) and the timing it
hands to its StreamRecorder.

Chunk k of a response is fed at t_ns = 1000 * (k + 1). Non-2xx responses keep their body (up
to 4 KiB) as error_body, which is how the decoded body bytes are checked here.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytps

HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def t_of(k: int) -> int:
    return 1000 * (k + 1)


def feed_all(chunks: list[bytes], dialect: str = "openai-chat", eof: bool = False) -> pytps.HttpStreamRecorder:
    rec = pytps.HttpStreamRecorder(dialect)
    for k, c in enumerate(chunks):
        used = rec.feed(c, t_of(k))
        assert used == len(c) or rec.message_done or rec.error
    if eof:
        rec.finish_eof(t_of(len(chunks)))
    return rec


def sse_event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


def chunked(body: bytes, size: int, ext: bytes = b"", trailers: bytes = b"") -> bytes:
    out = b""
    for i in range(0, len(body), size):
        piece = body[i : i + size]
        out += b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)
    return out + b"0\r\n" + trailers + b"\r\n"


def reference_dechunk(wire: bytes) -> bytes:
    """Straightforward RFC 9112 chunked decoder over a whole body (after the head)."""
    body, pos = b"", 0
    while True:
        eol = wire.index(b"\n", pos)
        size = int(wire[pos:eol].rstrip(b"\r").split(b";")[0].strip(b" \t"), 16)
        pos = eol + 1
        if size == 0:
            break
        body += wire[pos : pos + size]
        pos += size
        pos += 2 if wire[pos : pos + 2] == b"\r\n" else 1
    while True:  # trailers up to the empty line
        eol = wire.index(b"\n", pos)
        line = wire[pos:eol].rstrip(b"\r")
        pos = eol + 1
        if not line:
            return body


# ---- status line, headers, keep-alive -----------------------------------------


def test_status_headers_and_lookup():
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type:  text/event-stream \r\nX-Request-ID:\tabc\t\r\n"
        b"X-Empty:\r\nx-dup: 1\r\nX-Dup: 2\r\nContent-Length: 0\r\n\r\n"
    )
    rec = feed_all([raw])
    assert rec.status == 200
    assert rec.headers == [
        ("content-type", "text/event-stream"),
        ("x-request-id", "abc"),
        ("x-empty", ""),
        ("x-dup", "1"),
        ("x-dup", "2"),
        ("content-length", "0"),
    ]
    assert rec.header("X-REQUEST-ID") == "abc"
    assert rec.header("x-dup") == "1"
    assert rec.header("missing") is None
    assert rec.headers_done and rec.message_done and rec.keep_alive
    assert rec.content_length == 0 and not rec.chunked
    assert rec.t_headers_ns == 1000 and rec.error is None


def test_nothing_known_before_the_head_ends():
    rec = pytps.HttpStreamRecorder("openai-chat")
    assert rec.feed(b"HTTP/1.1 200 OK\r\nA: b\r\n", 5) == 23
    assert rec.status == 200 and not rec.headers_done and rec.t_headers_ns is None and not rec.keep_alive
    assert rec.feed(b"\r\n", 7) == 2
    assert rec.headers_done and rec.t_headers_ns == 7 and not rec.message_done  # close-delimited


@pytest.mark.parametrize(
    ("head", "keep_alive"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n", False),
        (b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n", True),
        (b"HTTP/1.1 200 OK\r\n", False),  # close-delimited body
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n", False),  # smuggling smell
    ],
)
def test_keep_alive(head, keep_alive):
    rec = feed_all([head + b"\r\n"])
    assert rec.headers_done and rec.keep_alive is keep_alive


def test_reason_may_be_empty_and_bare_lf_ends_lines():
    for line in (b"HTTP/1.1 200 \r\n", b"HTTP/1.1 200\r\n", b"HTTP/1.1 299 Whatever It Is\n"):
        rec = feed_all([line + b"Content-Length: 2\n\nok"])
        assert rec.error is None and rec.message_done
        assert rec.status == (299 if b"299" in line else 200)


def test_obsolete_line_folding_is_replaced_by_a_space():
    rec = feed_all([b"HTTP/1.1 404 Nope\r\nX-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 1\r\n\r\nx"])
    assert rec.header("x-long") == "one two three" and rec.error_body == b"x"


# ---- body framing --------------------------------------------------------------


def test_chunked_sse_with_extensions_and_trailers():
    body = sse_event("Hel") + sse_event("lo") + b"data: [DONE]\n\n"
    wire = HEAD_CHUNKED + chunked(body, 11, ext=b' ; name=value;q="x"', trailers=b"X-Trailer: 1\r\nY: 2\r\n")
    rec = feed_all([wire + b"HTTP/1.1 200 OK\r\n"])  # the next response is not consumed
    assert rec.message_done and rec.chunked and rec.error is None
    assert rec.body_bytes == len(body)
    r = rec.recorder
    assert r.text == "Hello" and r.done and list(r.output_times_ns) == [1000, 1000]
    assert rec.header("x-trailer") is None  # trailers are skipped


def test_feed_reports_bytes_after_the_message():
    rec = pytps.HttpStreamRecorder("openai-chat")
    wire = b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nboomEXTRA"
    assert rec.feed(wire, 1) == len(wire) - 5
    assert rec.message_done and rec.error_body == b"boom"
    assert rec.feed(b"more", 2) == 0


def test_content_length_body_split():
    err = b'{"error": {"message": "bad model"}}'
    rec = feed_all([b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n" % len(err) + err[:10], err[10:]])
    assert rec.status == 400 and rec.message_done and rec.error_body == err and rec.content_length == len(err)
    assert rec.recorder.events == 0  # non-2xx bodies are not recorded


def test_repeated_equal_content_lengths_are_fine():
    rec = feed_all([b"HTTP/1.1 500 X\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc"])
    assert rec.error is None and rec.error_body == b"abc"


def test_close_delimited_body():
    body = sse_event("a") + sse_event("b")
    rec = feed_all([b"HTTP/1.1 200 OK\r\n\r\n" + body[:20], body[20:]])
    assert not rec.message_done and not rec.keep_alive
    rec.finish_eof(5000)
    assert rec.message_done and rec.error is None and rec.recorder.closed
    assert rec.recorder.text == "ab" and list(rec.recorder.output_times_ns) == [2000, 2000]
    assert rec.recorder.end_ns == 5000


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(status):
    rec = pytps.HttpStreamRecorder("openai-chat")
    wire = b"HTTP/1.1 %d X\r\nContent-Length: 10\r\n\r\n" % status
    assert rec.feed(wire + b"tail", 1) == len(wire)
    assert rec.message_done and rec.status == status and rec.keep_alive and rec.error_body == b""


def test_informational_responses_are_skipped():
    wire = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sse_event("x")
    )
    for k in range(len(wire) + 1):
        rec = feed_all([wire[:k], wire[k:]], eof=True)
        assert rec.status == 200 and rec.headers == [("content-type", "text/event-stream")]
        assert rec.recorder.text == "x" and rec.error is None


def test_reset_for_the_next_response_on_the_connection():
    wire = b"HTTP/1.1 500 A\r\nContent-Length: 1\r\n\r\naHTTP/1.1 503 B\r\nContent-Length: 1\r\n\r\nb"
    rec = pytps.HttpStreamRecorder("anthropic")
    used = rec.feed(wire, 1)
    assert rec.error_body == b"a" and rec.keep_alive
    rec.close(2)
    rec.reset()
    assert rec.status is None and rec.t_headers_ns is None and rec.error_body == b""
    assert rec.feed(wire[used:], 3) == len(wire) - used
    assert rec.status == 503 and rec.error_body == b"b" and rec.t_headers_ns == 3


def test_error_body_keeps_only_4_kib():
    body = bytes(range(256)) * 40
    rec = feed_all([b"HTTP/1.1 500 X\r\nContent-Length: %d\r\n\r\n" % len(body), body])
    assert rec.message_done and rec.error_body == body[:4096] and rec.body_bytes == len(body)


def test_accepts_bytes_bytearray_memoryview():
    wire = b"HTTP/1.1 500 X\r\nContent-Length: 3\r\n\r\nabc"
    rec = pytps.HttpStreamRecorder("openai-chat")
    assert rec.feed(bytearray(wire[:10]), 1) == 10
    assert rec.feed(memoryview(wire)[10:], 2) == len(wire) - 10
    assert rec.error_body == b"abc"
    with pytest.raises(TypeError, match="bytes, bytearray or memoryview"):
        rec.feed("text", 3)


def test_bad_arguments_and_feed_after_close():
    with pytest.raises(ValueError, match="unknown dialect 'gpt'"):
        pytps.HttpStreamRecorder("gpt")
    with pytest.raises(ValueError, match="max_header_bytes"):
        pytps.HttpStreamRecorder("ollama", max_header_bytes=0)
    rec = pytps.HttpStreamRecorder("ollama")
    rec.close(1)
    with pytest.raises(ValueError, match="after close"):
        rec.feed(b"HTTP", 2)


def test_recorder_view_keeps_its_owner_alive():
    rec = feed_all([HEAD_CHUNKED + chunked(sse_event("z"), 5)])
    inner = rec.recorder
    del rec
    assert inner.text == "z" and isinstance(inner, pytps.StreamRecorder)


# ---- splits and stamps --------------------------------------------------------


SMALL_BODY = sse_event("A") + b": keep-alive\n\n" + sse_event("BC") + sse_event("D") + b"data: [DONE]\n\n"
SMALL_WIRE = HEAD_CHUNKED + chunked(SMALL_BODY, 13, ext=b";e=1", trailers=b"T: v\r\n")


def wire_offsets_of_event_ends(head: bytes, body: bytes, chunk: int, ext: bytes) -> list[int]:
    """Wire offsets of the byte completing each output-bearing event (the blank line's LF)."""
    ends, start = [], 0
    while (i := body.find(b"\n\n", start)) >= 0:
        if b'"content"' in body[start:i]:
            ends.append(i + 1)
        start = i + 2
    wire_pos, offs = len(head), {}
    for c0 in range(0, len(body), chunk):
        piece = body[c0 : c0 + chunk]
        wire_pos += len(b"%x%s\r\n" % (len(piece), ext))
        for j in range(len(piece)):
            offs[c0 + j] = wire_pos + j
        wire_pos += len(piece) + 2
    return [offs[e] for e in ends]


def test_every_two_way_split_gives_the_same_result_and_right_stamps():
    event_ends = wire_offsets_of_event_ends(HEAD_CHUNKED, SMALL_BODY, 13, b";e=1")
    assert len(event_ends) == 3
    for k in range(len(SMALL_WIRE) + 1):
        rec = feed_all([SMALL_WIRE[:k], SMALL_WIRE[k:]])
        assert rec.message_done and rec.error is None, k
        r = rec.recorder
        assert r.text == "ABCD" and r.done and r.events == 4, k
        expected = [t_of(0) if end < k else t_of(1) for end in event_ends]
        assert list(r.output_times_ns) == expected, k
        assert rec.t_headers_ns == (t_of(0) if k >= len(HEAD_CHUNKED) else t_of(1)), k


def test_every_two_way_split_decodes_the_same_body():
    wire = b"HTTP/1.1 500 X\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(SMALL_BODY, 13, b";e=1", b"T: v\r\n")
    for k in range(len(wire) + 1):
        rec = feed_all([wire[:k], wire[k:]])
        assert rec.message_done and rec.error_body == SMALL_BODY, k


def test_random_splits_and_byte_at_a_time():
    rng = random.Random(7)
    whole = feed_all([SMALL_WIRE])
    splits = [[SMALL_WIRE[i : i + 1] for i in range(len(SMALL_WIRE))]]
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(SMALL_WIRE)), rng.randint(1, 12)))
        splits.append([SMALL_WIRE[a:b] for a, b in zip([0, *cuts], [*cuts, len(SMALL_WIRE)])])
    for chunks in splits:
        rec = feed_all(chunks)
        assert (rec.status, rec.headers, rec.message_done, rec.keep_alive, rec.error) == (
            whole.status,
            whole.headers,
            True,
            True,
            None,
        )
        assert rec.recorder.text == whole.recorder.text and rec.body_bytes == len(SMALL_BODY)
        # Each event carries the stamp of the chunk holding its last byte.
        ends = wire_offsets_of_event_ends(HEAD_CHUNKED, SMALL_BODY, 13, b";e=1")
        bounds, pos = [], 0
        for c in chunks:
            pos += len(c)
            bounds.append(pos)
        expected = [t_of(next(i for i, b in enumerate(bounds) if e < b)) for e in ends]
        assert list(rec.recorder.output_times_ns) == expected


# ---- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", "bad status line"),
        (b"HTTP/1.1 20 OK\r\n\r\n", "bad status line"),
        (b"HTTP/1.1 099 OK\r\n\r\n", "bad status line"),
        (b"HTTP/1.1  200 OK\r\n\r\n", "bad status line"),
        (b"HTTP/1.1 200OK\r\n\r\n", "bad status line"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "bad status line"),
        (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "invalid character in the header name"),
        (b"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", "whitespace before ':'"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "without ':'"),
        (b"HTTP/1.1 200 OK\r\n folded\r\n\r\n", "whitespace before the first header"),
        (b"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", "bare CR"),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "differing Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", "differing Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "too large"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "unsupported Transfer-Encoding 'gzip'"),
        (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"),
        (HEAD_CHUNKED + b"zz\r\n", "bad chunk-size line"),
        (HEAD_CHUNKED + b"\r\n", "bad chunk-size line"),
        (HEAD_CHUNKED + b"5x\r\n", "bad chunk-size line"),
        (HEAD_CHUNKED + b"5\rx", "CR not followed by LF"),
        (HEAD_CHUNKED + b"3\r\nabcd\r\n", "not followed by CRLF"),
        (HEAD_CHUNKED + b"fffffffffffffffff\r\n", "too large"),
    ],
)
def test_framing_errors(wire, message):
    rec = pytps.HttpStreamRecorder("openai-chat")
    used = rec.feed(wire + b"\r\nmore bytes", 1)
    assert rec.error is not None and message in rec.error
    assert used < len(wire) + 12 and not rec.keep_alive and not rec.message_done
    assert rec.feed(b"anything", 2) == 0 and message in rec.error


def test_garbage_fails_before_a_whole_line_arrives():
    rec = pytps.HttpStreamRecorder("openai-chat")
    assert rec.feed(b"<html>", 1) == 0
    assert "bad status line starting '<html>'" in rec.error


def vm_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_oversized_headers_fail_with_bounded_memory():
    rec = pytps.HttpStreamRecorder("openai-chat")
    assert rec.feed(b"HTTP/1.1 200 OK\r\n", 1) == 17
    piece = b"X-Filler: " + b"y" * (1 << 20)  # one never-ending header line
    before = vm_rss_kib()
    used = [rec.feed(piece, 2) for _ in range(10)]  # 10 MiB of header bytes
    assert used[0] == 65536 - 17 and used[1:] == [0] * 9
    assert rec.error.startswith("headers too large") and "65536" in rec.error
    assert vm_rss_kib() - before < 4096


def test_many_short_headers_hit_the_byte_or_count_limit():
    rec = pytps.HttpStreamRecorder("openai-chat")
    rec.feed(b"HTTP/1.1 200 OK\r\n" + b"A: b\r\n" * 101 + b"\r\n", 1)
    assert rec.error == "too many headers: more than 100 header fields"
    rec = pytps.HttpStreamRecorder("openai-chat", max_header_bytes=100)
    rec.feed(b"HTTP/1.1 200 OK\r\n" + b"A: b\r\n" * 20 + b"\r\n", 1)
    assert rec.error.startswith("headers too large") and "100 bytes" in rec.error


def test_never_ending_chunk_size_lines_fail():
    rec = pytps.HttpStreamRecorder("openai-chat")
    rec.feed(HEAD_CHUNKED, 1)
    assert rec.feed(b"0" * (1 << 20), 2) == 64
    assert "more than 64 hex digits" in rec.error
    rec = pytps.HttpStreamRecorder("openai-chat")
    rec.feed(HEAD_CHUNKED + b"5;", 1)
    before = vm_rss_kib()
    for _ in range(10):
        rec.feed(b"x" * (1 << 20), 2)
    assert "chunk-size line longer than 4160 bytes" in rec.error
    assert vm_rss_kib() - before < 4096


def test_never_ending_trailers_fail():
    rec = pytps.HttpStreamRecorder("openai-chat")
    rec.feed(HEAD_CHUNKED + b"0\r\nT: " + b"v" * 70000, 1)
    assert rec.error.startswith("trailers too large")


@pytest.mark.parametrize(
    ("wire", "where"),
    [
        (b"", "no response bytes"),
        (b"HTTP/1.1 200 OK\r\nA: b", "inside the status line or headers"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "3 of 10 Content-Length body bytes"),
        (HEAD_CHUNKED + b"a\r\nabc", "inside the chunked body, after 3 body bytes"),
        (HEAD_CHUNKED + b"3\r\nabc\r\n", "inside the chunked body"),
        (HEAD_CHUNKED + b"0\r\nT: 1\r\n", "inside the chunked body"),
    ],
)
def test_eof_before_the_end_is_an_error(wire, where):
    rec = feed_all([wire], eof=True)
    assert rec.error.startswith("connection closed before the end of the response")
    assert where in rec.error and not rec.message_done and rec.recorder.closed


# ---- property: decoded body == reference decoder --------------------------------


@st.composite
def chunked_responses(draw):
    body = draw(st.binary(max_size=600))
    sizes, left = [], len(body)
    while left:
        s = draw(st.integers(1, left))
        sizes.append(s)
        left -= s
    eol = draw(st.sampled_from([b"\r\n", b"\n"]))
    wire, pos = b"HTTP/1.1 502 Bad Gateway" + eol + b"Transfer-Encoding: chunked" + eol + eol, 0
    for s in sizes:
        digits = draw(st.sampled_from(["%x", "%X", "%04x"])) % s
        ext = draw(st.sampled_from([b"", b";a", b";a=1;b=\"q\"", b" ;x", b"\t"]))
        wire += digits.encode() + ext + eol + body[pos : pos + s] + eol
        pos += s
    wire += b"0" + eol + draw(st.sampled_from([b"", b"X-T: 1" + eol, b"A: 1\r\nB: 2\r\n"])) + eol
    cuts = sorted(draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    return body, wire, cuts


@settings(max_examples=300, deadline=None)
@given(chunked_responses())
def test_decoded_body_matches_a_reference_decoder(case):
    body, wire, cuts = case
    head_end = wire.index(b"\n\n") + 2 if wire.startswith(b"HTTP/1.1 502 Bad Gateway\n") else wire.index(b"\r\n\r\n") + 4
    assert reference_dechunk(wire[head_end:]) == body
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]
    rec = feed_all(chunks + [b"trailing"])
    assert rec.error is None and rec.message_done
    assert rec.error_body == body and rec.body_bytes == len(body)
