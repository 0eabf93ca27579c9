"""Stubs of what csrc/bindings/register_http.cpp adds to pytps._core."""

from typing import Any, Final

from pytps._core.recorder import StreamRecorder

class HttpStreamRecorder:
    """One HTTP/1.x response read straight off the socket: an incremental response parser
    feeding a StreamRecorder, so a transport makes ONE native call per socket read.

    Parsing (RFC 9112): status line "HTTP/1.x NNN reason" (empty reason allowed); lines end
    at CRLF or bare LF; header names lowercased, values OWS-trimmed; obsolete line folding
    is replaced by one SP; 1xx responses (100 Continue, 103) are skipped (101 is an error).
    Body framing: none for 204/304; Transfer-Encoding: chunked (extensions and trailers
    skipped; any other transfer coding is an error); else Content-Length (digits only,
    repeated values must agree); else the body runs until the connection closes
    (finish_eof). HEAD responses are not supported. Memory is bounded: the status line and
    headers may take max_header_bytes (so may the trailers), at most 100 header fields, a
    chunk-size line at most 4160 bytes.

    A 2xx body goes to `recorder`, each piece stamped with its read's t_ns; any other
    status keeps the first 4096 body bytes as error_body.
    """

    def __init__(self, dialect: str, max_header_bytes: int = 65536) -> None:
        """dialect: one of DIALECTS (ValueError otherwise); max_header_bytes >= 1."""
    def feed(self, data: bytes | bytearray | memoryview, t_ns: int) -> int:
        """Consume one socket read made at t_ns. Returns the bytes consumed: len(data), unless the
        response ended inside data (the rest belongs to no response: pipelining or garbage) or a
        framing error was found (the offset of the offending byte; see error). A short count
        therefore means "check message_done / error"; once done or failed nothing more is
        consumed. Raises ValueError after close() or finish_eof()."""
    def finish_eof(self, t_ns: int) -> None:
        """The server closed the connection at t_ns: completes a close-delimited body; an unfinished
        response gets error "connection closed before the end of the response (...)". Closes the
        recorder at t_ns."""
    def close(self, t_ns: int) -> None:
        """End of the body at t_ns: closes the recorder (after message_done, or to give up).
        Only the first close()/finish_eof() counts for the recorder."""
    def reset(self) -> None:
        """Forget everything, ready for the next response on the same keep-alive connection."""
    def header(self, name: str) -> str | None:
        """The first value of a header (name compared case-insensitively), or None."""
    def readout(self, request_id_headers: tuple[str, ...]) -> tuple[Any, ...]:
        """Every read-out at once, in this order: t_headers_ns, status, headers_done, the first
        non-empty value of request_id_headers (tried in order) and content-encoding (both None
        until headers_done), content-type (as header() gives it), error, closed_early,
        error_body, body_start, recorder.readout(), recorder.error."""
    status: Final[int | None]
    """The final response's status once its status line is parsed, else None."""
    headers: Final[list[tuple[str, str]]]
    """(name, value) in arrival order; names lowercased, values decoded as latin-1."""
    headers_done: Final[bool]
    message_done: Final[bool]
    """The whole response, body included, has been read."""
    keep_alive: Final[bool]
    """The connection may carry another response: HTTP/1.1 unless "Connection: close", HTTP/1.0
    only with "keep-alive"; never after a close-delimited body, Transfer-Encoding together
    with Content-Length, or an error. False until headers_done."""
    chunked: Final[bool]
    content_length: Final[int | None]
    """The Content-Length framing the body, or None."""
    body_bytes: Final[int]
    """Decoded (de-chunked) body bytes so far."""
    t_headers_ns: Final[int | None]
    """t_ns of the read that completed the final response's headers."""
    error: Final[str | None]
    """The HTTP framing error naming what was wrong, or None. Errors inside the stream's events
    are recorder.error."""
    closed_early: Final[bool]
    """True when error is the connection ending before the response did (truncation); False
    when bytes broke the framing, or there is no error."""
    error_body: Final[bytes]
    """The first 4096 body bytes of a non-2xx response; b"" for 2xx."""
    body_start: Final[bytes]
    """The first 256 body bytes of a 2xx response: what a body that is not a stream began with."""
    recorder: Final[StreamRecorder]
    """The owned StreamRecorder (a view that keeps this object alive) with the timing read-outs."""
