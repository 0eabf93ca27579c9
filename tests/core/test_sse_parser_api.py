"""pytps.SSEParser / SSEEvent as a Python API: accepted buffers, bad arguments, the overflow
error, bounded memory and reuse."""

from __future__ import annotations

import array
import os
import subprocess
import sys
import textwrap

import pytest
from sse_harness import E

import pytps

STREAM = b"id: 1\nretry: 5\nevent: x\ndata: a\ndata: \xc3\xa9\n\ndata: b\n\n"
EXPECTED = [E("a\n\u00e9", event="x", id="1", retry=5), E("b", id="1", retry=5)]


def events(p, data):
    return [e._astuple() for e in p.feed(data)]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=["bytes", "bytearray", "memoryview"])
def test_feed_accepts_bytes_bytearray_and_memoryview(wrap):
    assert events(pytps.SSEParser(), wrap(STREAM)) == EXPECTED


def test_feed_accepts_a_sliced_memoryview():
    # A view that starts inside its buffer: the parser must honour the offset and length.
    padded = bytearray(b"XXXX" + STREAM + b"data: never\n\n")
    view = memoryview(padded)[4 : 4 + len(STREAM)]
    assert events(pytps.SSEParser(), view) == EXPECTED
    p = pytps.SSEParser()
    mid = len(STREAM) // 2
    assert events(p, view[:mid]) + events(p, view[mid:]) == EXPECTED


def test_feed_accepts_other_contiguous_buffers():
    arr = array.array("B", STREAM)
    assert events(pytps.SSEParser(), arr) == EXPECTED
    assert events(pytps.SSEParser(), memoryview(STREAM).cast("c")) == EXPECTED


def test_feed_accepts_empty_input():
    p = pytps.SSEParser()
    for empty in (b"", bytearray(), memoryview(b"")):
        assert p.feed(empty) == []
    assert p.close() is False


@pytest.mark.parametrize("bad", ["data: a\n\n", 42, None, [100, 97], object()], ids=lambda v: type(v).__name__ if type(v) is object else repr(v))
def test_feed_rejects_non_buffers_with_type_error(bad):
    p = pytps.SSEParser()
    with pytest.raises(TypeError, match="bytes, bytearray or memoryview"):
        p.feed(bad)
    assert events(p, STREAM) == EXPECTED  # still usable


def test_feed_rejects_a_non_contiguous_view():
    with pytest.raises(BufferError):
        pytps.SSEParser().feed(memoryview(STREAM)[::2])


def test_feed_after_a_buffer_is_mutated_sees_only_what_was_fed():
    # Events own their strings: changing the buffer afterwards changes nothing.
    buf = bytearray(b"data: abc\n\n")
    [ev] = pytps.SSEParser().feed(buf)
    buf[6:9] = b"xyz"
    assert ev.data == "abc"


def test_max_line_bytes_must_be_positive():
    with pytest.raises(ValueError, match="max_line_bytes"):
        pytps.SSEParser(max_line_bytes=0)
    with pytest.raises(TypeError):
        pytps.SSEParser(max_line_bytes=-1)
    assert pytps.SSEParser().max_line_bytes == 16 << 20
    assert pytps.SSEParser(max_line_bytes=5).max_line_bytes == 5


def test_state_properties():
    p = pytps.SSEParser()
    assert (p.last_event_id, p.retry) == ("", None)
    p.feed(b"id: \xff7\nretry: 250\n")
    assert (p.last_event_id, p.retry) == ("\ufffd7", 250)


def test_sse_event_value_semantics():
    a = pytps.SSEEvent("x", "d", "1", 5)
    assert (a.event, a.data, a.id, a.retry) == ("x", "d", "1", 5)
    assert a == pytps.SSEEvent(event="x", data="d", id="1", retry=5)
    assert a != pytps.SSEEvent("x", "d", "1", None)
    assert a != ("x", "d", "1", 5)
    assert hash(a) == hash(pytps.SSEEvent("x", "d", "1", 5))
    assert repr(a) == "SSEEvent(event='x', data='d', id='1', retry=5)"
    assert pytps.SSEEvent() == pytps.SSEEvent("message", "", "", None)
    [ev] = pytps.SSEParser().feed(b"data: d\n\n")
    assert ev == pytps.SSEEvent(data="d")


def test_protocol_error_keeps_the_call_events_and_the_parser_goes_on():
    p = pytps.SSEParser(max_line_bytes=32)
    chunk = b"data: a\n\ndata: " + b"x" * 40 + b"\nid: 9\n\ndata: b\n\ndata: c"
    with pytest.raises(pytps.ProtocolError) as info:
        p.feed(chunk)
    assert isinstance(info.value, pytps.PytpsError)
    assert [e._astuple() for e in info.value.events] == [E("a"), E("b")]
    assert "max_line_bytes" in str(info.value)
    assert events(p, b"\n\n") == [E("c")]
    assert p.last_event_id == ""  # the id: inside the discarded event was ignored


def test_overflow_in_an_earlier_call_raises_only_once():
    p = pytps.SSEParser(max_line_bytes=8)
    with pytest.raises(pytps.ProtocolError) as info:
        p.feed(b"data: 0123456789")
    assert info.value.events == []
    assert p.feed(b"0123456789") == []  # the same overlong line: already reported
    assert p.feed(b"\ndata: x\n") == []  # still the discarded event
    assert events(p, b"\ndata: y\n\n") == [E("y")]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_stays_bounded_on_a_never_ending_line():
    mib = 1 << 20
    p = pytps.SSEParser(max_line_bytes=mib)
    chunk = b"x" * mib  # reused: 64 MiB go through the parser, never held at once
    p.feed(b"data: ")
    before = _rss_bytes()
    raised = 0
    for _ in range(64):
        try:
            assert p.feed(chunk) == []
        except pytps.ProtocolError:
            raised += 1
    grown = _rss_bytes() - before
    assert raised == 1
    assert grown < 4 * mib, f"RSS grew by {grown / mib:.1f} MiB"
    # The line ends; the parser is usable and the next event is intact.
    assert events(p, b"\n\ndata: ok\n\n") == [E("ok")]
    assert p.close() is False


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_stays_bounded_on_endless_data_lines():
    mib = 1 << 20
    p = pytps.SSEParser(max_line_bytes=mib)
    chunk = b"data: " + b"y" * 1000 + b"\n"
    block = chunk * 1024  # 1 MiB of data lines and no blank line
    before = _rss_bytes()
    raised = 0
    for _ in range(64):
        try:
            p.feed(block)
        except pytps.ProtocolError:
            raised += 1
    assert raised == 1
    assert _rss_bytes() - before < 4 * mib
    assert events(p, b"\ndata: ok\n\n") == [E("ok")]


def test_parser_is_reusable_after_close():
    p = pytps.SSEParser()
    for _ in range(3):
        assert events(p, STREAM) == EXPECTED
        assert p.close() is False
        p.feed(b"data: half")
        assert p.close() is True


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_close_gives_back_the_memory_of_a_huge_event():
    # In a fresh interpreter: how much freed memory malloc hands back to the OS depends on
    # what the process allocated before (glibc raises its mmap threshold after large frees).
    code = textwrap.dedent(
        """
        import os, pytps
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        mib = 1 << 20
        p = pytps.SSEParser()
        block = (b"data: " + b"y" * 1000 + b"\\n") * 8192  # an 8 MiB event, never dispatched
        before = rss()
        p.feed(block)
        held = rss() - before
        incomplete = p.close()
        after = rss() - before
        print(held > 4 * mib, incomplete, after < 2 * mib, held // mib, after // mib)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["True", "True", "True"], out
