"""Drives the native SSEParser and the reference the same way, for tests/test_sse_*.py."""

from __future__ import annotations

from collections.abc import Sequence

from sse_reference import DEFAULT_MAX_LINE_BYTES, parse

import pytps

Event = tuple[str, str, str, "int | None"]
# Per feed: (events completed by it, whether it raised ProtocolError).
Feeds = list[tuple[list[Event], bool]]


def E(data: str, event: str = "message", id: str = "", retry: int | None = None) -> Event:
    return (event, data, id, retry)


def split(stream: bytes, cuts: Sequence[int]) -> list[bytes]:
    """The chunks of stream between the sorted cut points (repeats give empty chunks)."""
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def run_native(chunks: Sequence[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
    """(per-feed results, last_event_id, retry, close()) of one native parser."""
    p = pytps.SSEParser(max_line_bytes)
    feeds: Feeds = []
    for c in chunks:
        try:
            evs, err = p.feed(c), False
        except pytps.ProtocolError as e:
            evs, err = e.events, True
        feeds.append(([e._astuple() for e in evs], err))
    return feeds, p.last_event_id, p.retry, p.close()


def run_reference(chunks: Sequence[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
    """What run_native must return, from one reading of the whole stream: each feed gets
    the events dispatched and the overflows detected inside its bytes."""
    res = parse(b"".join(chunks), max_line_bytes)
    feeds: Feeds = []
    lo = 0
    for c in chunks:
        hi = lo + len(c)
        evs = [e.astuple() for e in res.events if lo <= e.pos < hi]
        feeds.append((evs, any(lo <= q < hi for q in res.error_positions)))
        lo = hi
    return feeds, res.last_event_id, res.retry, res.incomplete


def flatten(result) -> tuple[list[Event], bool, str, int | None, bool]:
    """Chunking-independent view: all events, whether any feed raised, id, retry, close()."""
    feeds, last_id, retry, incomplete = result
    return [e for evs, _ in feeds for e in evs], any(err for _, err in feeds), last_id, retry, incomplete
