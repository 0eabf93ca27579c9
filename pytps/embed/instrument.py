"""pytps.instrument(client): an application's own httpx / httpx2 client, timed at the socket.

Two replacements, both inside the client the application keeps using:

- the connection pool's network backend (httpcore's or httpcore2's) becomes one whose streams
  stamp pytps.now_ns() right after every socket read and right before every write: the streams
  of the httpx transport of `pytps run` (pytps.transport.stamping). Stamping when the SDK pulls
  bytes would time the application, not the network;
- the client's transport is wrapped: each HTTP attempt gets a RequestRecord, and each body chunk
  the SDK pulls is fed, unchanged and with the stamp of the read that brought it, to a
  StreamRecorder before it is handed on. h11 turns a read's bytes into body data before the next
  read, so the last read is the one that delivered the chunk's final bytes.

With HTTP/2 one connection's reads serve several streams, and a connection opened before
instrument() has the old backend: their chunks are stamped when pulled (time HTTP/1.1 calls).
"""

from __future__ import annotations

import functools
import importlib
import json
from typing import Any, TypeVar, overload

from pytps._native import _core
from pytps.embed.collector import Collector, deliver
from pytps.embed.context import call_of, current_tag
from pytps.embed.timer import check_dialect
from pytps.errors import ConfigError
from pytps.measure.bodies import read_body
from pytps.measure.records import ERROR_CLIENT, RequestRecord
from pytps.results.record import Record, next_index
from pytps.transport.base import classify_status, classify_stream
from pytps.transport.classify import error_class
from pytps.transport.stamping import AsyncStampingBackend, Stamped, StampingBackend, SyncStampingBackend
from pytps.workload.request_formats import JSON_DIALECT

_now_ns = _core.now_ns

#: Request paths (their ends) and the dialect their streams speak, from the core's table of API
#: paths. An application's base URL carries the version (.../v1, or none behind Azure's
#: deployments), so an OpenAI-style path is known by what follows "/v1"; the longest end is
#: tried first ("/chat/completions" before "/completions").
_PATH_DIALECTS = tuple(
    sorted(
        ((path.removeprefix("/v1"), dialect) for dialect, paths in _core.DIALECT_PATHS.items() for path in paths),
        key=lambda end_dialect: -len(end_dialect[0]),
    )
)
#: The APIs answered by one JSON body (embeddings, rerank), by the end of their paths.
_PATH_BODY_APIS = tuple((path.removeprefix("/v1"), api) for api, path in _core.BODY_API_PATHS.items())
_STREAM_TYPES = ("text/event-stream", "application/x-ndjson")
_ERROR_BODY_BYTES = 4096


def dialect_for_path(path: str) -> str | None:
    """The dialect of a generation request's path, or None for any other request."""
    path = path.rstrip("/")
    for end, dialect in _PATH_DIALECTS:
        if path.endswith(end):
            return dialect
    return None


def body_api_for_path(path: str) -> str | None:
    """The embeddings or rerank API of a request's path (pytps's --api name), or None."""
    path = path.rstrip("/")
    return next((api for end, api in _PATH_BODY_APIS if path.endswith(end)), None)


def _inputs_of(request: Any, api: str) -> tuple[int | None, int | None]:
    """(inputs, top_n) an embeddings or rerank request carried, from its JSON body; (None, None)
    when the body cannot be read (a streamed upload)."""
    try:
        body = json.loads(request.content)
    except Exception:
        return None, None
    if not isinstance(body, dict):
        return None, None
    items = body.get("documents" if api == "rerank" else "input")
    top_n = body.get("top_n") if api == "rerank" and isinstance(body.get("top_n"), int) else None
    return (len(items) if isinstance(items, list) else 1), top_n


# ---- the network backend: stamps at the read -------------------------------------------------


def _stamp_pool(transport: Any, is_async: bool) -> bool:
    """Gives an httpx(2) HTTPTransport's pool (or proxy pool) the stamping backend; False when the
    transport has no pool (a mock or a custom transport: chunks are then stamped when pulled)."""
    pool: Any = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        return False
    if not isinstance(backend, StampingBackend):
        pool._network_backend = AsyncStampingBackend(backend) if is_async else SyncStampingBackend(backend)
    return True


# ---- one HTTP attempt --------------------------------------------------------------------------


class _Attempt:
    """One HTTP attempt's record while it goes: opened when the request is handed to the transport,
    closed when its body ends, fails, or the application closes the response."""

    __slots__ = ("body_api", "collector", "error_body", "extras", "net", "rec", "recorder", "t_last_ns")

    def __init__(self, request: Any, dialect: str | None, collector: Collector | None) -> None:
        t = _now_ns()
        rec = self.rec = RequestRecord(index=next_index(), transport="instrument")
        rec.t_submit_ns = rec.t_send_ns = t
        headers = request.headers
        try:
            retry_count = int(headers.get("x-stainless-retry-count", 0))
        except ValueError:
            retry_count = 0
        call_id, attempt = call_of(retry_count)
        path = request.url.path
        # Embeddings and rerank: read as pytps run reads them (pytps.measure.bodies).
        self.body_api = None if dialect is not None else body_api_for_path(path)
        if self.body_api is not None:
            rec.inputs, rec.top_n = _inputs_of(request, self.body_api)
        self.extras: dict[str, Any] = {
            "call_id": call_id,
            "attempt": attempt,
            "tag": current_tag(),
            "dialect": dialect or dialect_for_path(path),
            "method": request.method,
            "path": path,  # never the query: it can hold keys
            "streamed": False,
        }
        self.collector = collector
        self.recorder: Any = None
        self.net: Any = None
        self.error_body: bytearray | None = None
        self.t_last_ns = 0

    def failed_before_response(self, exc: BaseException) -> None:
        rec = self.rec
        rec.t_done_ns = _now_ns()
        rec.error = error_class(exc, response_started=False)
        rec.error_detail = f"{type(exc).__name__}: {exc}"
        self._deliver()

    def response(self, response: Any) -> None:
        rec = self.rec
        net = response.extensions.get("network_stream")
        self.net = net if isinstance(net, Stamped) else None
        if self.net is not None:
            if self.net.last_write_ns:
                rec.t_send_ns = self.net.last_write_ns
            rec.t_headers_ns = self.t_last_ns = self.net.last_read_ns
        else:
            rec.t_headers_ns = self.t_last_ns = _now_ns()
        rec.status = status = response.status_code
        content_type = response.headers.get("content-type", "")
        streamed = any(t in content_type for t in _STREAM_TYPES)
        self.extras["streamed"] = streamed
        dialect = self.extras["dialect"]
        if status >= 300:
            self.error_body = bytearray()
        elif streamed and dialect is not None:
            self.recorder = _core.StreamRecorder(dialect)
        elif not streamed and (dialect is not None or self.body_api is not None):
            # A whole JSON body (stream false, embeddings, rerank): kept, read at its end.
            self.recorder = _core.StreamRecorder(JSON_DIALECT)
            rec.stream = False

    def chunk_time(self) -> int:
        net = self.net
        t: int = net.last_read_ns if net is not None else _now_ns()
        self.t_last_ns = t
        return t

    def keep_error_body(self, chunk: bytes) -> None:
        body = self.error_body
        if body is not None and len(body) < _ERROR_BODY_BYTES:
            body += chunk[: _ERROR_BODY_BYTES - len(body)]

    def hot_feed(self) -> tuple[Any, Any] | None:
        """(recorder.feed, the stamping stream) when each chunk can go straight to the recorder
        with the stamp of its read: the hot path, one C call per chunk. None: use pulled()."""
        if self.recorder is None or self.net is None:
            return None
        return self.recorder.feed, self.net

    def pulled(self, chunk: bytes) -> None:
        """A chunk the application pulled, off the hot path: stamped when pulled if no read
        stamp is known, fed to the recorder, or kept as the start of an error body."""
        t = self.chunk_time()
        if self.recorder is not None:
            self.recorder.feed(chunk, t)
        else:
            self.keep_error_body(chunk)

    def __enter__(self) -> _Attempt:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        # The body was read to its end, or failed (GeneratorExit: the application closed it).
        self.finish(exc, complete=exc is None)

    def finish(self, exc: BaseException | None, complete: bool) -> None:
        """The body ended (complete: read to its end), failed (exc), or was closed unread."""
        rec = self.rec
        if rec.t_done_ns is not None:
            return
        # The read that brought the body's last bytes (or the last one before it was given up).
        t_end = self.net.last_read_ns if self.net is not None else self.t_last_ns
        rec.t_done_ns = t_end
        recorder = self.recorder
        if recorder is not None:
            recorder.close(t_end)
            rec.fill_from_recorder(recorder)
        else:
            rec.end_ns = t_end if complete else None
        if exc is not None and not isinstance(exc, GeneratorExit):
            rec.error = error_class(exc, response_started=True)
            rec.error_detail = f"{type(exc).__name__}: {exc}"
        elif self.error_body is not None:
            classify_status(rec, rec.status or 0, bytes(self.error_body))
        elif not complete and not (recorder is not None and recorder.done):
            # (An SDK closes a stream once it saw the terminal marker, before the body's last bytes.)
            rec.error = ERROR_CLIENT
            rec.error_detail = "the application closed the response before its end"
        elif recorder is not None:
            classify_stream(rec, recorder.error)
        if not rec.stream:
            read_body(rec, self.body_api or self.extras["dialect"])
        self._deliver()

    def _deliver(self) -> None:
        deliver(Record(self.rec, self.extras), self.collector)


# ---- the wrapped transport and response stream, per package (httpx, httpx2) ----------------------


class _Sending:
    """An attempt while its request is sent: a failure before any response is recorded as the
    attempt's end, and raised on to the application as it was."""

    __slots__ = ("attempt",)

    def __init__(self, attempt: _Attempt) -> None:
        self.attempt = attempt

    def __enter__(self) -> _Attempt:
        return self.attempt

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            self.attempt.failed_before_response(exc)


class _Wrapped:
    """An httpx(2) transport wrapped, sync or async: each HTTP attempt through it gets a record."""

    def __init__(self, inner: Any, dialect: str | None, collector: Collector) -> None:
        self.inner = inner
        self._dialect = dialect
        self._collector = collector

    def _sending(self, request: Any) -> _Sending:
        return _Sending(_Attempt(request, self._dialect, self._collector))


class _Body:
    """A response body, sync or async: the client's own, and the attempt each chunk is fed to."""

    def __init__(self, inner: Any, attempt: _Attempt) -> None:
        self._inner = inner
        self._attempt = attempt


@functools.cache
def _classes(package: str) -> tuple[type, type, type, type]:
    """(sync transport, async transport, sync body, async body) subclassing `package`'s bases:
    httpx(2) checks a response body's class to tell sync from async."""
    pkg: Any = importlib.import_module(package)

    class SyncBody(_Body, pkg.SyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Any:
            with self._attempt as attempt:  # finished when the body ends, fails or is closed
                hot = attempt.hot_feed()
                if hot is not None:
                    feed, net = hot
                    for part in self._inner:
                        feed(part, net.last_read_ns)
                        yield part
                else:
                    for part in self._inner:
                        attempt.pulled(part)
                        yield part

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._attempt.finish(None, complete=False)

    class AsyncBody(_Body, pkg.AsyncByteStream):  # type: ignore[misc]
        async def __aiter__(self) -> Any:
            with self._attempt as attempt:  # finished when the body ends, fails or is closed
                hot = attempt.hot_feed()
                if hot is not None:
                    feed, net = hot
                    async for part in self._inner:
                        feed(part, net.last_read_ns)
                        yield part
                else:
                    async for part in self._inner:
                        attempt.pulled(part)
                        yield part

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._attempt.finish(None, complete=False)

    class SyncTransport(_Wrapped, pkg.BaseTransport):  # type: ignore[misc]
        def handle_request(self, request: Any) -> Any:
            with self._sending(request) as attempt:
                response = self.inner.handle_request(request)
            attempt.response(response)
            response.stream = SyncBody(response.stream, attempt)
            return response

        def close(self) -> None:
            self.inner.close()

        def __enter__(self) -> Any:
            self.inner.__enter__()
            return self

        def __exit__(self, *exc: Any) -> None:
            self.inner.__exit__(*exc)

    class AsyncTransport(_Wrapped, pkg.AsyncBaseTransport):  # type: ignore[misc]
        async def handle_async_request(self, request: Any) -> Any:
            with self._sending(request) as attempt:
                response = await self.inner.handle_async_request(request)
            attempt.response(response)
            response.stream = AsyncBody(response.stream, attempt)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

        async def __aenter__(self) -> Any:
            await self.inner.__aenter__()
            return self

        async def __aexit__(self, *exc: Any) -> None:
            await self.inner.__aexit__(*exc)

    return SyncTransport, AsyncTransport, SyncBody, AsyncBody


def _package_of(client: Any) -> str:
    package = type(client).__module__.split(".")[0]
    if package in ("httpx", "httpx2"):
        pkg = importlib.import_module(package)
        if isinstance(client, (pkg.Client, pkg.AsyncClient)):
            return package
    raise ConfigError(
        f"pytps.instrument() takes an httpx or httpx2 Client or AsyncClient, not {type(client).__name__}; "
        "for other clients, time the body with pytps.time_stream() or pytps.StreamTimer (docs/embedding.md)"
    )


def default_client() -> Any:
    """A sync client of the package the installed SDKs use: httpx2 when installed, else httpx."""
    try:
        import httpx2
    except ImportError:
        import httpx

        return httpx.Client()
    return httpx2.Client()


_Client = TypeVar("_Client")


@overload
def instrument(client: None = None, *, dialect: str | None = None, collector: Collector | None = None) -> Any: ...
@overload
def instrument(client: _Client, *, dialect: str | None = None, collector: Collector | None = None) -> _Client: ...


def instrument(client: Any = None, *, dialect: str | None = None, collector: Collector | None = None) -> Any:
    """Returns `client` (an httpx or httpx2 Client or AsyncClient; by default a new sync one)
    instrumented: every HTTP attempt it makes becomes a Record in `collector` (by default a new
    in-memory Collector, `client.collector`). dialect: the streams' API (pytps.DIALECTS), when
    the request path does not tell it."""
    if dialect is not None:
        check_dialect(dialect)
    if client is None:
        client = default_client()
    package = _package_of(client)
    if getattr(client, "collector", None) is not None:
        raise ConfigError("this client is instrumented already: pass it on as it is (its records: client.collector)")
    pkg: Any = importlib.import_module(package)
    is_async = isinstance(client, pkg.AsyncClient)
    sync_transport, async_transport, _, _ = _classes(package)
    wrapper = async_transport if is_async else sync_transport
    collector = collector if collector is not None else Collector()
    client._transport = wrapper(_stamped(client._transport, is_async), dialect, collector)
    client._mounts = {
        pattern: None if t is None else wrapper(_stamped(t, is_async), dialect, collector)
        for pattern, t in client._mounts.items()
    }
    client.collector = collector
    return client


def _stamped(transport: Any, is_async: bool) -> Any:
    _stamp_pool(transport, is_async)
    return transport


__all__ = ["Record", "default_client", "dialect_for_path", "instrument"]
