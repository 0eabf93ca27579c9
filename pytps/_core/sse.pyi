"""Stubs of what csrc/bindings/register_sse.cpp adds to pytps._core."""

from typing import Final

class SSEEvent:
    """One dispatched Server-Sent Event; owned strings."""

    def __init__(self, event: str = "message", data: str = "", id: str = "", retry: int | None = None) -> None: ...
    event: Final[str]
    """The event type: 'message' unless an event: field set it."""
    data: Final[str]
    """The data lines joined with '\\n'."""
    id: Final[str]
    """The last event ID in effect at dispatch ('' if none); it persists across events."""
    retry: Final[int | None]
    """The reconnection time (ms) in effect at dispatch, or None if never set."""

class SSEParser:
    """Incremental Server-Sent Events parser following the WHATWG event-stream rules."""

    def __init__(self, max_line_bytes: int = 16777216) -> None: ...
    def feed(self, data: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Parse a chunk split anywhere; returns the events it completed. Raises pytps.ProtocolError
        (with .events holding this call's completed events) when a line or one event's data
        exceeds max_line_bytes; that event is discarded and parsing goes on."""
    def close(self) -> bool:
        """End of stream: True when an incomplete event was discarded. Resets the parser."""
    last_event_id: Final[str]
    retry: Final[int | None]
    max_line_bytes: Final[int]
