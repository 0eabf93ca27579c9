"""The one contract between the runner and the things that send requests: ``Transport``.

A transport turns a rendered ``RequestSpec`` into a ``RequestRecord``: when the request's last
byte was written, when each read arrived (CLOCK_MONOTONIC ns, stamped once, at the read), the
status and the error class. It knows nothing about metrics, schedules or other transports. Three
ship with pytps (native, asyncio, httpx); to plug in your own client, implement this protocol
and pass an instance to ``Runner(cfg, transport=...)``.

What a transport must do:

- ``send(spec)`` sends one streaming POST and returns its record, also when the request failed:
  a failure is an error class on the record (``docs/metrics.md``, "Errors"), never an exception.
  Fill ``t_send_ns`` (the last byte of the request written), ``t_done_ns``, ``status`` and the
  recorder's read-outs (``RequestRecord.fill_from_recorder``): feed each read to a
  ``pytps.StreamRecorder`` with the stamp taken right after the read returned.
- Classify the body the same way as the others: ``classify_status`` for a status >= 300,
  ``classify_stream`` for what a 2xx stream said, ``content_coding`` first for a 2xx body the
  server compressed (every transport asks for ``Accept-Encoding: identity``).
- A request whose kept-alive connection turns out closed before any byte of a response is sent
  again, once, on a new connection (never another pooled one): ``retries`` counts it and
  ``t_send_ns`` is the resend's. A request that gets no byte of a response otherwise is error
  class ``no_response`` (``no_response_detail``).
- Never leave a connection for reuse when its request was not all written (an early answer).
- ``aclose()`` releases connections and threads; the runner calls it once, after the last send.
- ``name`` names the transport in the results; ``schedule_lead_ns`` (0 unless the transport
  paces sends itself) is how far ahead of ``t_sched_ns`` the runner hands a rate-mode request over;
  ``tls_library`` names the TLS stack that spoke https:// (None over http://);
  ``thread_cpu_s`` is the CPU of any thread of the transport's own (None when it has none).

A transport that hands finished requests back in batches may also offer ``BatchTransport``'s
pair, ``start_batches(on_batch)`` and ``submit_batch(specs)``: the runner's concurrency mode then
fills its slots a batch at a time (the native engine's; issue 42).

Requests that are not timed (listing models) do not go through a transport: pytps.runner.endpoint
makes them.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pytps.measure.records import (
    ERROR_IN_STREAM,
    ERROR_PROTOCOL,
    ERROR_TRUNCATED,
    RequestRecord,
    compressed_body_detail,
    http_error_class,
    new_record_of,
)

__all__ = [
    "ERROR_BODY_CHARS",
    "RequestRecord",
    "RequestSpec",
    "Timeouts",
    "Transport",
    "classify_compressed",
    "classify_not_a_stream",
    "classify_redirect",
    "classify_status",
    "classify_stream",
    "content_coding",
    "describe_exception",
]

#: How much of an error response's body a record keeps (as error_detail).
ERROR_BODY_CHARS = 500


@dataclass(frozen=True)
class Timeouts:
    """How long a transport waits (as httpx.Timeout says it): for a connection (a TLS handshake
    included), for each next byte of a response (the first too), and for the whole response
    (None: no limit). A run's come from its settings (pytps.transport.registry)."""

    connect_s: float = 10.0
    read_s: float = 120.0
    total_s: float | None = None


@dataclass
class RequestSpec:
    """One request, rendered before it is sent so that no work sits between t_send and the wire."""

    index: int
    path: str
    body: bytes
    headers: dict[str, str]
    dialect: str
    warmup: bool = False
    t_sched_ns: int | None = None
    prompt_tokens_planned: int | None = None
    max_tokens: int | None = None
    usage_requested: bool = True
    # A whole JSON body (dialect "json"): embeddings, rerank, generation with stream false.
    stream: bool = True
    inputs: int | None = None
    top_n: int | None = None
    dimensions: int | None = None
    images: int = 0
    image_bytes: int = 0
    image_pixels: int = 0
    # The id pytps sent in --request-id-header's header (its value), kept in the journal.
    sent_request_id: str | None = None

    def new_record(self, transport: str) -> RequestRecord:
        """The record a transport fills in for this request, carrying what the spec knows."""
        return new_record_of(
            {
                "index": self.index,
                "warmup": self.warmup,
                "t_sched_ns": self.t_sched_ns,
                "prompt_tokens_planned": self.prompt_tokens_planned,
                "max_tokens": self.max_tokens,
                "usage_requested": self.usage_requested,
                "sent_request_id": self.sent_request_id,
                "request_bytes": len(self.body),
                "transport": transport,
                "stream": self.stream,
                "inputs": self.inputs,
                "top_n": self.top_n,
                "dimensions": self.dimensions,
                "images": self.images,
                "image_bytes": self.image_bytes,
                "image_pixels": self.image_pixels,
            }
        )


@runtime_checkable
class Transport(Protocol):
    """Sends RequestSpecs and returns RequestRecords (see the module's docstring)."""

    name: str
    schedule_lead_ns: int
    tls_library: str | None

    async def send(self, spec: RequestSpec) -> RequestRecord: ...

    async def aclose(self) -> None: ...

    @property
    def thread_cpu_s(self) -> float | None: ...


class BatchTransport(Transport, Protocol):
    """A Transport that may also send without a coroutine per request: after start_batches,
    the records of requests sent by submit_batch (each as send() would return it) come to
    on_batch, every request that finished by a wake-up of the event loop in one call, on the
    loop's thread."""

    def start_batches(self, on_batch: Callable[[list[RequestRecord]], None]) -> None: ...

    def submit_batch(self, specs: list[RequestSpec]) -> None: ...


#: Response headers that carry the server's id of a request, in the order they are preferred;
#: a response with none of them is known by its body's `id` (RequestRecord.response_id).
REQUEST_ID_HEADERS = ("x-request-id", "request-id")


def response_request_id(header: Callable[[str], str | None]) -> str | None:
    """The server's request id from a response's headers (`header(name)`: a value or None), read
    once the request finished (never while its reads are stamped)."""
    for name in REQUEST_ID_HEADERS:
        value = header(name)
        if value:
            return str(value)
    return None


def content_coding(header: str | None) -> str | None:
    """The Content-Encoding a body was sent with, or None for an uncompressed one ("identity")."""
    if not header:
        return None
    codings = [c.strip().lower() for c in header.split(",") if c.strip().lower() not in ("", "identity")]
    return ", ".join(codings) or None


def _decoded(body: bytes, coding: str | None) -> bytes:
    """An error body as the server meant it: gzip and deflate undone, as far as the kept bytes go
    (a cut-off body decodes to its start). Other codings are named, not decoded."""
    if coding is None:
        return body
    if coding in ("gzip", "x-gzip", "deflate"):
        # 47: gzip or zlib by its header; -15: the raw deflate some servers send as "deflate".
        for wbits in (47, -15):
            try:
                return zlib.decompressobj(wbits).decompress(body, ERROR_BODY_CHARS * 4)
            except zlib.error:
                continue
    return f"(a {len(body)}-byte body with Content-Encoding: {coding}, not decoded)".encode()


def classify_status(rec: RequestRecord, status: int, body: bytes, coding: str | None = None) -> None:
    """An HTTP error response: class http_<status>, and the start of its body (decoded when the
    server compressed it: coding, from content_coding()) as the detail."""
    rec.error = http_error_class(status)
    rec.error_detail = _decoded(bytes(body), coding)[:ERROR_BODY_CHARS].decode("utf-8", "replace")


def classify_compressed(rec: RequestRecord, coding: str) -> None:
    """A 2xx body the server compressed: class protocol, naming the coding and the fix."""
    rec.error, rec.error_detail = ERROR_PROTOCOL, compressed_body_detail(coding, rec.stream)


#: What a bare exception of each class (an empty message) means, in words.
_MEANING = {
    "ReadError": "the connection failed while reading the response (connection reset by peer, or closed)",
    "WriteError": "the connection failed while sending the request (connection reset by peer, or closed)",
    "ConnectError": "the connection could not be made",
    "RemoteProtocolError": "the server broke HTTP (it closed the connection or sent bytes that are not HTTP)",
    "ConnectionResetError": "connection reset by peer",
    "BrokenPipeError": "the server closed the connection while the request was being sent (broken pipe)",
    "ReadTimeout": "no byte came within the read timeout",
    "TimeoutError": "timed out",
    "IncompleteRead": "the response ended before its declared length",
}


def describe_exception(exc: BaseException) -> str:
    """`Class: message` for an error detail, never with nothing after the colon: an exception
    without a message is described by the first message in its chain (httpx wraps the socket's
    ConnectionResetError), else by what its class means."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        text = str(cause).strip()
        if text:
            return f"{type(exc).__name__}: {text}"
        cause = cause.__cause__ or cause.__context__
    return (
        f"{type(exc).__name__}: {_MEANING.get(type(exc).__name__, 'no message given (' + type(exc).__module__ + ')')}"
    )


def classify_redirect(rec: RequestRecord, status: int, location: str | None) -> None:
    """A 3xx: class http_<status>, naming where it points; pytps never follows a redirect (its
    key would go to whichever host the server names)."""
    rec.error = http_error_class(status)
    where = f"to {location}" if location else "without a Location"
    rec.error_detail = (
        f"the server redirected {where} (HTTP {status}); pytps does not follow redirects: "
        "point --base-url at the final URL"
    )


#: Media types a streaming answer comes as (SSE; NDJSON for Ollama; JSON for a server that
#: answers a stream request with one object).
_STREAM_TYPES = ("text/event-stream", "ndjson", "json")


@functools.lru_cache(maxsize=64)
def _streamed_type(media: str) -> bool:
    """Whether a media type is one of _STREAM_TYPES, kept per type: a server sends one or two
    types a run, and the test was ~1 us of every whole-body request (issue 42)."""
    return any(t in media for t in _STREAM_TYPES)


def classify_not_a_stream(rec: RequestRecord, content_type: str | None, body_start: bytes) -> bool:
    """A 2xx answer that carried no event and is not a stream by its Content-Type (a proxy's HTML
    sign-in page): class protocol, naming the type and the body's first bytes. False (nothing
    done) for anything else."""
    if rec.events:
        return False
    media = (content_type or "").split(";")[0].strip().lower()
    if not media or _streamed_type(media):
        return False
    text = " ".join(body_start.decode("utf-8", "replace").split())
    quoted = repr(text[:80] + ("…" if len(text) > 80 else ""))
    wanted = "text/event-stream" if rec.stream else "JSON"
    rec.error, rec.error_detail = ERROR_PROTOCOL, f"server answered {media}, not {wanted}: {quoted}"
    return True


def classify_answer(
    rec: RequestRecord,
    status: int,
    header: Callable[[str], str | None],
    error_body: bytes,
    coding: str | None,
    body_start: bytes,
    stream_error: dict[str, Any] | None,
    content_type: str | None,
) -> None:
    """The error class of a response read to its end, by what the server answered: a redirect, an
    error status (its body decoded by `coding`), a compressed stream, a body that is no stream, or
    what the stream itself said. Every transport's last word on a request. header(name): the
    response's header, or None; content_type: its Content-Type (read with the rest by a
    transport that reads a response's facts in one call)."""
    if 300 <= status < 400:
        classify_redirect(rec, status, header("location"))
    elif status >= 300:
        classify_status(rec, status, error_body, coding)
    elif coding is not None:
        classify_compressed(rec, coding)
    elif not classify_not_a_stream(rec, content_type, body_start):
        classify_stream(rec, stream_error)


def classify_stream(rec: RequestRecord, stream_error: dict[str, Any] | None) -> None:
    """Errors seen in a 2xx body: an in-stream error, a protocol error, or a missing terminal marker."""
    if stream_error is not None:
        rec.error = ERROR_IN_STREAM if stream_error["kind"] == "in_stream" else ERROR_PROTOCOL
        rec.error_detail = stream_error["message"]
    elif not rec.done:
        rec.error = ERROR_TRUNCATED
        rec.error_detail = (
            "the stream ended before its terminal marker" if rec.stream else "the response body ended before its end"
        )
