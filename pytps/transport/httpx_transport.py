"""The httpx transport: HTTP through httpx/httpcore, with every socket read stamped.

httpcore reads the socket through a network stream; we hand it one that stamps
pytps.now_ns() right after each read (transport/stamping, shared with pytps.instrument). Body
chunks that httpx yields after that read carry its stamp: h11 turns the bytes of a read into
body data before the next read, so the last read is the one that delivered the chunk's final
bytes. (With HTTP/2, one connection's reads serve several streams, so a stamp can be later than
the true arrival by the time other streams' data took; use HTTP/1.1 for timing.) Errors are
classed by transport/classify, as an instrumented client's are.

httpx's own transport hides its connection pool, so ours builds the pool with the stamping
backend and maps requests and responses the way httpx's does. It also does what httpcore does
not: a request whose kept-alive connection the server had closed before any byte of a response
is sent again on a new connection (HTTP/1.1), and a response that comes while a large body is
still being written is read rather than lost when the server then resets the connection.

Every request asks for Accept-Encoding: identity, and bodies are read raw (never decoded): the
size cap counts the bytes that came, and a compressed stream is reported, not timed.
"""

from __future__ import annotations

import os
import ssl
import typing

import httpcore
import httpx

from pytps._native import _core
from pytps.measure.records import (
    ERROR_NO_RESPONSE,
    MAX_RESPONSE_BYTES,
    RequestRecord,
    no_response_detail,
    response_too_large_detail,
)
from pytps.transport.base import (
    RequestSpec,
    Timeouts,
    classify_answer,
    content_coding,
    describe_exception,
    response_request_id,
)
from pytps.transport.base_url import BaseUrl
from pytps.transport.classify import error_class
from pytps.transport.network import tls_hint
from pytps.transport.stamping import AsyncStampingBackend, current_request, watch_request

_now_ns = _core.now_ns


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class _OneOffStream:
    """A response body on a connection of its own: closing it closes the connection."""

    def __init__(self, stream: typing.AsyncIterable[bytes], conn: httpcore.AsyncHTTPConnection) -> None:
        self._stream = stream
        self._conn = conn

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        try:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
        finally:
            await self._conn.aclose()


# What httpcore raises when a connection ends before (or while) the response is read.
_ENDED = (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError)


class StampingTransport(httpx.AsyncBaseTransport):
    """httpx transport over an httpcore pool whose sockets stamp every read."""

    def __init__(
        self,
        *,
        http2: bool = False,
        max_connections: int = 100,
        verify: bool = True,
        tls: bool = True,
        ca_file: str | None = None,
    ) -> None:
        # Loading the CA store costs ~50 ms: only when the endpoint speaks TLS. ca_file: this
        # PEM bundle instead of the system's CAs (as the native transport does).
        ctx = None
        if tls:
            if verify:
                ctx = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
            else:
                ctx = ssl._create_unverified_context()
            if http2:
                ctx.set_alpn_protocols(["h2", "http/1.1"])
        self._ssl_context = ctx
        self._http2 = http2
        self._backend = AsyncStampingBackend(httpcore.AnyIOBackend())
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ctx,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=60.0,
            http1=True,
            http2=http2,
            network_backend=typing.cast(httpcore.AsyncNetworkBackend, self._backend),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        io = current_request()
        try:
            resp = await self._pool.handle_async_request(req)
            stream = typing.cast(typing.AsyncIterable[bytes], resp.stream)
        except _ENDED:
            # A pooled HTTP/1.1 connection the server had closed before any byte of a response:
            # sent again, on a connection of its own (another pooled one could be as stale).
            # HTTP/2 multiplexes one connection, so its reads cannot be told apart per request.
            if io is None or io.new_connection or io.bytes_read or self._http2:
                raise
            io.retries += 1
            conn = httpcore.AsyncHTTPConnection(
                origin=req.url.origin,
                ssl_context=self._ssl_context,
                network_backend=typing.cast(httpcore.AsyncNetworkBackend, self._backend),
            )
            try:
                resp = await conn.handle_async_request(req)
            except BaseException:
                await conn.aclose()
                raise
            stream = _OneOffStream(typing.cast(typing.AsyncIterable[bytes], resp.stream), conn)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_ResponseStream(stream),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _PhaseTrace:
    """httpcore trace callback: stamps the connection phases of one request."""

    def __init__(self) -> None:
        self.stamps: dict[str, int] = {}

    async def __call__(self, name: str, info: dict[str, typing.Any]) -> None:
        self.stamps[name] = _now_ns()

    def send_ns(self) -> int | None:
        # Runs right after httpcore's last write of the request: from here the server has it all.
        return self.stamps.get("http11.send_request_body.complete") or self.stamps.get(
            "http2.send_request_body.complete"
        )

    def phases_ns(self) -> dict[str, int]:
        s = self.stamps
        out: dict[str, int] = {}
        for phase, start, end in (
            ("connect", "connection.connect_tcp.started", "connection.connect_tcp.complete"),
            ("tls", "connection.start_tls.started", "connection.start_tls.complete"),
            ("send", "http11.send_request_headers.started", "http11.send_request_body.complete"),
            ("wait_headers", "http11.send_request_body.complete", "http11.receive_response_headers.complete"),
            ("send", "http2.send_request_headers.started", "http2.send_request_body.complete"),
            ("wait_headers", "http2.send_request_body.complete", "http2.receive_response_headers.complete"),
        ):
            if start in s and end in s:
                out[phase] = s[end] - s[start]
        return out


class ResponseTooLarge(Exception):
    """The response went past MAX_RESPONSE_BYTES: the client stopped reading it."""


def _how_ended(exc: BaseException) -> str:
    """How a connection ended, in no_response_detail's words."""
    if isinstance(exc, (httpx.RemoteProtocolError, httpcore.RemoteProtocolError)):
        return "the server closed the connection"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno:
            return f"the connection failed: {os.strerror(seen.errno)}"
        seen = seen.__cause__ or seen.__context__
    return f"the connection failed: {type(exc).__name__}"


class HttpxTransport:
    """Sends RequestSpecs through an httpx.AsyncClient and returns RequestRecords."""

    name = "httpx"
    schedule_lead_ns: int = 0  # rate mode: sent when the event loop's sleep ends
    thread_cpu_s: float | None = None  # no thread of its own: its work is the event loop's

    def __init__(
        self,
        base_url: str,
        *,
        http2: bool = False,
        max_connections: int = 100,
        timeouts: Timeouts | None = None,
        verify: bool = True,
        ca_file: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        # httpx would put the userinfo in Basic auth over any API key, and join a base URL's
        # query into the middle of the path: each request's URL is built by transport/base_url.
        self._url = BaseUrl.parse(self.base_url)
        self.http2 = http2
        timeouts = timeouts or Timeouts()
        self.timeouts = timeouts
        tls = self._url.tls
        # The TLS library that measured (results metadata); None over plain http://.
        self.tls_library: str | None = ssl.OPENSSL_VERSION if tls else None
        self._client = httpx.AsyncClient(
            transport=StampingTransport(
                http2=http2, max_connections=max_connections, verify=verify, tls=tls, ca_file=ca_file
            ),
            timeout=httpx.Timeout(connect=timeouts.connect_s, read=timeouts.read_s, write=30.0, pool=None),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def send(self, spec: RequestSpec) -> RequestRecord:
        rec = spec.new_record(self.name)
        recorder = _core.StreamRecorder(spec.dialect)
        trace = _PhaseTrace()
        # httpx would ask for gzip, br, zstd: a compressed stream cannot be timed event by event.
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            **spec.headers,
            **self._url.auth_for(spec.headers),
        }
        request = self._client.build_request(
            "POST", self._url.url(spec.path), content=spec.body, headers=headers, extensions={"trace": trace}
        )
        io = watch_request()
        rec.t_submit_ns = _now_ns()
        try:
            response = await self._client.send(request, stream=True)
        except Exception as exc:
            rec.t_done_ns = _now_ns()
            rec.t_send_ns = trace.send_ns() or rec.t_submit_ns
            rec.retries = io.retries
            rec.connection_id = io.connection_id
            rec.error = error_class(exc, response_started=io.bytes_read > 0)
            if rec.error == ERROR_NO_RESPONSE:
                rec.error_detail = no_response_detail(_how_ended(exc), io.retries > 0)
            else:
                rec.error_detail = describe_exception(exc)
                hint = tls_hint(exc)
                if hint:
                    rec.error_detail += f" ({hint})"
            rec.phases_ns = trace.phases_ns()
            return rec
        rec.retries = io.retries
        stream = response.extensions.get("network_stream")
        rec.connection_id = getattr(stream, "connection_id", None)
        # t_send is when the request's last bytes were written to the socket (docs/metrics.md):
        # the Python work before it, and connection setup, are the client's, reported apart.
        # On HTTP/1.1 the connection's last write before the response is this request's body;
        # HTTP/2 interleaves requests on one connection, so there the trace tells.
        last_write_ns: int = getattr(stream, "last_write_ns", 0)
        if not self.http2 and last_write_ns:
            rec.t_send_ns = last_write_ns
        else:
            rec.t_send_ns = trace.send_ns() or rec.t_submit_ns
        rec.t_headers_ns = getattr(stream, "last_read_ns", None) or _now_ns()
        rec.status = response.status_code
        rec.request_id = response_request_id(response.headers.get)
        coding = content_coding(response.headers.get("content-encoding"))
        body_error: BaseException | None = None
        error_body = body_start = b""
        try:
            if response.status_code >= 300:
                async for chunk in response.aiter_raw():
                    if len(error_body) < 4096:
                        error_body += chunk
            elif coding is None:
                feed = recorder.feed
                deadline = rec.t_send_ns + int(self.timeouts.total_s * 1e9) if self.timeouts.total_s else None
                received = 0
                async for chunk in response.aiter_raw():
                    t = stream.last_read_ns if stream is not None else _now_ns()
                    if received < 256:  # what a body that is not a stream began with
                        body_start += chunk[: 256 - received]
                    received += len(chunk)
                    if received > MAX_RESPONSE_BYTES:
                        raise ResponseTooLarge(response_too_large_detail(MAX_RESPONSE_BYTES))
                    feed(chunk, t)
                    if deadline is not None and t > deadline:
                        raise TimeoutError(f"the response took longer than {self.timeouts.total_s} s (total timeout)")
        except Exception as exc:
            body_error = exc
        finally:
            await response.aclose()
        t_end = _now_ns()
        recorder.close(t_end)
        rec.t_done_ns = t_end
        rec.fill_from_recorder(recorder)
        rec.phases_ns = trace.phases_ns()
        if "wait_headers" in rec.phases_ns and rec.t_send_ns is not None:
            # The wait ends at the read that completed the head (its stamp, taken at the read), not
            # at httpcore's event after parsing it: the phase and t_headers_ns then agree.
            rec.phases_ns["wait_headers"] = max(0, rec.t_headers_ns - rec.t_send_ns)
        if body_error is not None and response.status_code < 300 and coding is None:
            rec.error = error_class(body_error, response_started=True)
            rec.error_detail = describe_exception(body_error)
        else:
            classify_answer(
                rec, response.status_code, response.headers.get, error_body, coding, body_start, recorder.error,
                response.headers.get("content-type"),
            )  # fmt: skip
        return rec
