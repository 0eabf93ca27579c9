"""A slow, plain Python reference of the WHATWG HTML "event stream interpretation" rules.

It exists to check the native pytps.SSEParser: it reads the whole stream at once, follows
the spec text step by step, and records *where* in the byte stream each event is
dispatched and each overflow is detected, so a test can predict what every feed() of any
chunking must return (see RefParser).

Spec rules (https://html.spec.whatwg.org/multipage/server-sent-events.html):
- the stream is decoded as UTF-8, invalid bytes -> U+FFFD, one leading U+FEFF dropped;
- lines end at CRLF, LF or CR;
- a blank line dispatches; a line starting with ':' is a comment; otherwise the field name
  is what precedes the first ':' (the whole line when there is none), the value what
  follows it minus one leading space;
- data: value + LF appended to the data buffer; event: sets the event type buffer;
  id: sets the last event ID buffer unless the value contains NUL; retry: sets the
  reconnection time when the value is ASCII digits; other fields are ignored;
- dispatch: nothing when the data buffer is empty (the buffers are reset); otherwise the
  final LF is removed and the event (type "message" unless set) is delivered; the data and
  event type buffers reset, the last event ID does not;
- an unterminated last line is never processed.

pytps choices where the spec leaves room (see docs/sse.md):
- retry: one or more ASCII digits whose value fits int64 (an empty value or an overflow
  is ignored); an event carries the reconnection time in effect at dispatch, or None;
- id: an event carries the last event ID in effect ('' when none);
- close(): True when an incomplete event is thrown away, i.e. not discarding and (the
  data buffer is non-empty, or the unterminated last line is non-empty and not a comment);
- max_line_bytes: a line longer than the bound (raw bytes, terminator excluded, BOM
  excluded) or a data line that would make the data buffer (values + one LF each) longer
  than the bound discards the current event: the buffers are cleared and every line up to
  the next blank line is ignored, and an error is reported. An overlong line is detected
  at its (max_line_bytes + 1)-th byte, a data buffer overflow at the data line's end.
  One wrinkle: bytes EF or EF BB at the very start of the stream may still become a BOM,
  so they count as line bytes only once the next byte shows they are not one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_MAX_LINE_BYTES = 16 << 20
INT64_MAX = 2**63 - 1
BOM = b"\xef\xbb\xbf"

_EOL_TEXT = re.compile("\r\n|\r|\n")
_EOL_BYTES = re.compile(b"\r\n|\r|\n")
_ASCII_DIGITS = re.compile("[0-9]+")


@dataclass(frozen=True)
class RefEvent:
    event: str
    data: str
    id: str
    retry: int | None
    pos: int = field(compare=False)  # stream index of the blank line that dispatched it

    def astuple(self) -> tuple[str, str, str, int | None]:
        return (self.event, self.data, self.id, self.retry)


@dataclass
class RefResult:
    events: list[RefEvent]
    error_positions: list[int]  # stream index of the byte at which each overflow is known
    incomplete: bool  # what close() returns
    last_event_id: str  # the parser's state after the stream, before close()
    retry: int | None


def _bom_prefix_len(stream: bytes) -> int:
    """How many leading bytes match the BOM (0..3)."""
    n = 0
    while n < 3 and n < len(stream) and stream[n] == BOM[n]:
        n += 1
    return n


def parse(stream: bytes, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> RefResult:
    stream = bytes(stream)
    # The spec's view: decode everything, drop one BOM, split into lines.
    text = stream.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    text_lines = _EOL_TEXT.split(text)  # the last item is the unterminated rest ('' if none)

    # The same split on the raw bytes, for byte lengths and stream positions. Every byte
    # the rules act on (CR, LF, ':', ' ', NUL, digits) is ASCII and ASCII bytes are never
    # swallowed by a U+FFFD, so line k of the text is exactly line k of the bytes decoded.
    matched = _bom_prefix_len(stream)
    start = 3 if matched == 3 else 0
    # Up to which index a proper BOM prefix at the start is undecided (not yet line data).
    undecided_until = matched if 0 < matched < 3 else 0
    raw_lines: list[tuple[int, int | None]] = []  # (start, terminator index or None)
    for m in _EOL_BYTES.finditer(stream, start):
        raw_lines.append((start, m.start()))
        start = m.end()
    raw_lines.append((start, None))
    assert len(raw_lines) == len(text_lines)
    for (a, b), t in zip(raw_lines, text_lines):
        assert stream[a : len(stream) if b is None else b].decode("utf-8", "replace") == t

    events: list[RefEvent] = []
    errors: list[int] = []
    data: list[str] = []
    data_bytes = 0  # size of the data buffer in bytes, one LF per line included
    event_type = ""
    last_id = ""
    retry: int | None = None
    discarding = False

    def overflow(pos: int) -> None:
        nonlocal discarding, data, data_bytes, event_type
        errors.append(pos)
        discarding = True
        data, data_bytes, event_type = [], 0, ""

    for (a, b), line in zip(raw_lines, text_lines):
        end = len(stream) if b is None else b
        if end - a > max_line_bytes:
            known_at = max(a + max_line_bytes, undecided_until if a == 0 else 0)
            if known_at < len(stream):
                overflow(known_at)
                continue
        if b is None:
            break  # the unterminated last line is not interpreted
        if line == "":
            if not discarding and data:
                events.append(RefEvent(event_type or "message", "\n".join(data), last_id, retry, b))
            discarding = False
            data, data_bytes, event_type = [], 0, ""
            continue
        if discarding or line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            # The value's raw length: the line minus "data", the ':' and the one space.
            value_bytes = (end - a) - len(name) - len(colon) - (1 if colon and line[5:6] == " " else 0)
            if data_bytes + value_bytes + 1 > max_line_bytes:
                overflow(b)
                continue
            data.append(value)
            data_bytes += value_bytes + 1
        elif name == "event":
            event_type = value
        elif name == "id":
            if "\x00" not in value:
                last_id = value
        elif name == "retry":
            # lstrip first: int() refuses over 4300 digits, and zeros don't change the value.
            digits = value.lstrip("0")
            if _ASCII_DIGITS.fullmatch(value) and len(digits) <= 19 and int(digits or "0") <= INT64_MAX:
                retry = int(digits or "0")
        # any other field is ignored

    rest = text_lines[-1]
    incomplete = not discarding and (bool(data) or (rest != "" and not rest.startswith(":")))
    return RefResult(events, errors, incomplete, last_id, retry)


class RefProtocolError(ValueError):
    def __init__(self, events: list[RefEvent]):
        super().__init__("overflow")
        self.events = events


class RefParser:
    """The native parser's interface on top of parse(): feed() re-reads the whole stream so
    far and returns the events dispatched inside the new bytes (quadratic, for tests only)."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
        self.max_line_bytes = max_line_bytes
        self._stream = bytearray()

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[RefEvent]:
        lo = len(self._stream)
        self._stream += chunk
        res = parse(bytes(self._stream), self.max_line_bytes)
        new = [e for e in res.events if e.pos >= lo]
        if any(p >= lo for p in res.error_positions):
            raise RefProtocolError(new)
        return new

    @property
    def last_event_id(self) -> str:
        return parse(bytes(self._stream), self.max_line_bytes).last_event_id

    @property
    def retry(self) -> int | None:
        return parse(bytes(self._stream), self.max_line_bytes).retry

    def close(self) -> bool:
        res = parse(bytes(self._stream), self.max_line_bytes)
        self._stream.clear()
        return res.incomplete
