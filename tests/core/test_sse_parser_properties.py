"""Property tests: the native SSEParser agrees with the reference on arbitrary streams, and
how the stream is split into feed() calls changes nothing but which call returns what."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sse_harness import flatten, run_native, run_reference, split
from sse_reference import DEFAULT_MAX_LINE_BYTES

import pytps

TERMINATOR = st.sampled_from([b"\n", b"\r", b"\r\n"])
# Bytes that are not valid UTF-8 (or are BOMs/NUL) to sprinkle into values.
ODD_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\x80", b"\xc0\xaf",
     b"\xf4\x90\x80\x80", b"\xef\xbb\xbf", b"\xef\xbb", b"\x00"]
)
TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=10).map(str.encode)
EMOJI = st.sampled_from(["\U0001f600", "\U00010348", "\u00e9", "\u4e2d", "\u2028"]).map(str.encode)
VALUE = st.lists(st.one_of(TEXT, EMOJI, ODD_BYTES, st.sampled_from([b" ", b"  ", b":", b": "])), max_size=4).map(
    b"".join
)
RETRY_VALUE = st.one_of(
    st.integers(0, 2**64).map(lambda i: str(i).encode()),
    st.sampled_from([b"", b"-1", b"+1", b"1a", b" 5", b"007", b"9" * 30, b"1.5", "\u0661".encode()]),
)
NAME = st.sampled_from([b"data", b"event", b"id", b"retry", b"foo", b"Data", b"", b"dat", b"data "])
BLANK = st.just(b"")
LINE = st.one_of(
    BLANK,
    BLANK,
    st.builds(b"data: ".__add__, VALUE),
    st.builds(b"data:".__add__, VALUE),
    st.builds(b"event: ".__add__, VALUE),
    st.builds(b"id: ".__add__, VALUE),
    st.builds(b"retry: ".__add__, RETRY_VALUE),
    st.builds(b":".__add__, VALUE),
    st.builds(lambda n, v: n + b":" + v, NAME, VALUE),
    NAME,
    st.binary(max_size=8),  # anything, CR and LF included
)
PREFIX = st.sampled_from([b"", b"", b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
GRAMMAR_STREAM = st.builds(
    lambda prefix, lines, tail: prefix + b"".join(line + end for line, end in lines) + tail,
    PREFIX,
    st.lists(st.tuples(LINE, TERMINATOR), max_size=25),
    st.one_of(st.just(b""), LINE),  # an unterminated last line
)
TOKEN_STREAM = st.lists(
    st.sampled_from([b"\r", b"\n", b"\r\n", b"data", b"id", b"retry", b"event", b":", b" ", b"\xef", b"\xbb",
                     b"\xbf", b"\x00", b"1", b"x", b"\xf0\x9f\x98\x80"]),
    max_size=60,
).map(b"".join)
# Events of several short data lines: the data buffer outgrows the bound before any line does.
DATA_EVENT = st.lists(
    st.tuples(
        st.sampled_from([b"data:", b"data: ", b"data"]),
        st.binary(max_size=4).map(lambda v: v.replace(b"\r", b"").replace(b"\n", b"")),
        TERMINATOR,
    ),
    min_size=1,
    max_size=6,
).map(lambda lines: b"".join(name + (b"" if name == b"data" else value) + end for name, value, end in lines))
DATA_STREAM = st.lists(st.tuples(DATA_EVENT, TERMINATOR), max_size=4).map(
    lambda events: b"".join(e + end for e, end in events)
)
STREAM = st.one_of(GRAMMAR_STREAM, GRAMMAR_STREAM, DATA_STREAM, TOKEN_STREAM, st.binary(max_size=200))


def _bounds_near_the_edges(stream: bytes) -> list[int]:
    """max_line_bytes values at which something in this stream just fits or just overflows:
    each line's length and each event's data buffer size, +-1."""
    sizes = {1, 2, 3}
    buffer = 0
    for line in re.split(b"\r\n|\r|\n", stream):
        sizes.add(len(line))
        if not line:
            buffer = 0
        elif line.startswith(b"data:"):
            buffer += len(line) - 5 - (line[5:6] == b" ") + 1
            sizes.add(buffer)
    return sorted({k + d for k in sizes for d in (-1, 0, 1) if k + d >= 1})


@st.composite
def stream_and_bound(draw, streams=STREAM):
    stream = draw(streams)
    bound = draw(
        st.one_of(
            st.just(DEFAULT_MAX_LINE_BYTES), st.integers(1, 40), st.sampled_from(_bounds_near_the_edges(stream))
        )
    )
    return stream, bound



def _sliced_view(c: bytes) -> memoryview:
    return memoryview(b"<<" + c + b">")[2 : 2 + len(c)]


WRAPPERS = [bytes, bytearray, memoryview, _sliced_view]


@settings(max_examples=400, deadline=None)
@given(stream_and_bound())
def test_native_agrees_with_reference(case):
    stream, max_line_bytes = case
    assert run_native([stream], max_line_bytes) == run_reference([stream], max_line_bytes)


@settings(max_examples=300, deadline=None)
@given(stream_and_bound(), st.data())
def test_any_chunking_gives_the_same_events(case, data):
    stream, max_line_bytes = case
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts"))
    wraps = data.draw(st.lists(st.sampled_from(WRAPPERS), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
    chunks = split(stream, cuts)
    native = run_native([w(c) for w, c in zip(wraps, chunks)], max_line_bytes)
    # Feed for feed as the reference predicts, and in total the same as one feed.
    assert native == run_reference(chunks, max_line_bytes)
    assert flatten(native) == flatten(run_native([stream], max_line_bytes))


@settings(max_examples=150, deadline=None)
@given(stream_and_bound())
def test_one_byte_chunks_with_empty_chunks_between(case):
    stream, max_line_bytes = case
    chunks = [piece for i in range(len(stream)) for piece in (stream[i : i + 1], b"")]
    assert run_native(chunks, max_line_bytes) == run_reference(chunks, max_line_bytes)


@settings(max_examples=100, deadline=None)
@given(stream_and_bound(STREAM.filter(lambda s: len(s) <= 80)))
def test_every_two_way_split_of_a_small_stream(case):
    stream, max_line_bytes = case
    whole = flatten(run_native([stream], max_line_bytes))
    for i in range(len(stream) + 1):
        chunks = [stream[:i], stream[i:]]
        native = run_native(chunks, max_line_bytes)
        assert native == run_reference(chunks, max_line_bytes), f"split at {i}"
        assert flatten(native) == whole


REALISTIC = (
    b"\xef\xbb\xbf: ping\r\n\r\nid: 1\r\nevent: delta\r\ndata: {\"t\":\"h\xc3\xa9\"}\r\n\r\n"
    b"retry: 100\rdata: a\rdata:\r\rdata: \xf0\x9f\x98\x80\n\ndata: [DONE]\n\ndata: tail"
)


@pytest.mark.parametrize("max_line_bytes", [DEFAULT_MAX_LINE_BYTES, 12])
def test_every_three_way_split_of_a_realistic_stream(max_line_bytes):
    whole = run_native([REALISTIC], max_line_bytes)
    assert len(flatten(whole)[0]) == (4 if max_line_bytes > 100 else 3)
    n = len(REALISTIC)
    for i in range(n + 1):
        for j in range(i, n + 1, 3):
            chunks = split(REALISTIC, [i, j])
            native = run_native(chunks, max_line_bytes)
            assert native == run_reference(chunks, max_line_bytes), (i, j)
            assert flatten(native) == flatten(whole)


@settings(max_examples=100, deadline=None)
@given(STREAM, stream_and_bound())
def test_close_forgets_the_previous_stream(first, case):
    second, max_line_bytes = case
    p = pytps.SSEParser(max_line_bytes)
    try:
        p.feed(first)
    except pytps.ProtocolError:
        pass
    p.close()
    try:
        evs, err = p.feed(second), False
    except pytps.ProtocolError as e:
        evs, err = e.events, True
    reused = ([([e._astuple() for e in evs], err)], p.last_event_id, p.retry, p.close())
    assert reused == run_native([second], max_line_bytes)
