"""Reference framing for the recorder tests: where each event of a raw body ends.

This is deliberately independent of pytps: a few lines of the WHATWG event-stream rules
(and NDJSON for Ollama) so that the tests can say *which chunk* completes each event for
any way of splitting the body, and so compute the t_ns every event must be stamped with.

An event "ends" at the byte whose arrival completes it: for SSE the first byte of the
line terminator of the blank line that dispatches it (a lone CR already ends a line, so
for CRLF it is the CR), for NDJSON the first byte of the line's terminator. JSON Lines
makes the last line separator optional (jsonlines.org: "The last character in a file
following the last JSON value may be a line separator"), so an unterminated last NDJSON
line is still a line: it is read at close() and ends at the body's last byte.
"""

from __future__ import annotations

_BOM = b"\xef\xbb\xbf"


def _lines(raw: bytes):
    """Yields (line_bytes, terminator_offset); the unterminated rest as (bytes, None)."""
    i = 3 if raw.startswith(_BOM) else 0
    start = i
    n = len(raw)
    while i < n:
        b = raw[i]
        if b == 0x0A or b == 0x0D:
            yield raw[start:i], i
            if b == 0x0D and i + 1 < n and raw[i + 1] == 0x0A:
                i += 1
            start = i + 1
        i += 1
    if start < n:
        yield raw[start:n], None


def frame_sse(raw: bytes) -> tuple[list[tuple[int, str]], bool]:
    """[(end_offset, data)] of the dispatched events, and whether the body ended inside an event."""
    events: list[tuple[int, str]] = []
    data: list[bytes] = []
    tail = False
    for line, term in _lines(raw):
        if term is None:
            tail = True
            break
        if line == b"":
            if data:
                events.append((term, b"\n".join(data).decode("utf-8", "replace")))
            data = []
            continue
        if line.startswith(b":"):
            continue
        field, sep, value = line.partition(b":")
        if sep and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
    return events, tail or bool(data)


def frame_ndjson(raw: bytes) -> tuple[list[tuple[int, str]], bool]:
    events: list[tuple[int, str]] = []
    for line, term in _lines(raw):
        if term is None:
            if line.strip():
                events.append((len(raw) - 1, line.decode("utf-8", "replace")))
            break
        if line.strip():
            events.append((term, line.decode("utf-8", "replace")))
    return events, False


def frame_events(raw: bytes, dialect: str) -> tuple[list[tuple[int, str]], bool]:
    return frame_ndjson(raw) if dialect == "ollama" else frame_sse(raw)


def chunk_of(offset: int, bounds: list[int]) -> int:
    """Index of the chunk holding byte `offset`, given the chunks' end offsets (ascending)."""
    for k, end in enumerate(bounds):
        if offset < end:
            return k
    raise ValueError(f"offset {offset} is past the body")
