"""Network streams that stamp every socket read, for httpcore and httpcore2 pools, sync and async.

httpcore (and its fork httpcore2) reads the socket through a network stream that its network
backend opens. The backends here wrap the pool's own backend, and their streams stamp
pytps.now_ns() right after each read returns and right before each write: the httpx transport
of `pytps run` (httpx_transport) and an application's instrumented client (embed/instrument)
both time through them. Body chunks that the client yields after a read carry its stamp: h11
turns the bytes of a read into body data before the next read, so the last read is the one that
delivered a chunk's final bytes.

Nothing here imports httpcore: the streams and backends forward to whatever they wrap.
"""

from __future__ import annotations

import collections
import contextvars
import itertools
from typing import Any

from pytps._native import _core

_now_ns = _core.now_ns


class RequestIO:
    """What one request's exchange saw below the pool: whether it opened a connection, how many
    response bytes came, and how many times it was sent again. Set per request with watch_request()
    (a context variable: httpcore runs an HTTP/1.1 exchange in the caller's task or thread)."""

    __slots__ = ("bytes_read", "connection_id", "new_connection", "retries")

    def __init__(self) -> None:
        self.new_connection = False
        self.connection_id: int | None = None  # of the connection it opened, if it opened one
        self.bytes_read = 0
        self.retries = 0


_request_io: contextvars.ContextVar[RequestIO | None] = contextvars.ContextVar("pytps_request_io", default=None)


def watch_request() -> RequestIO:
    """A new RequestIO that the streams fill for the request the current context sends next."""
    io = RequestIO()
    _request_io.set(io)
    return io


def current_request() -> RequestIO | None:
    """The RequestIO of the current context's request, if watch_request() set one."""
    return _request_io.get()


def _asyncio_transport(stream: Any) -> Any:
    """The asyncio transport under an anyio stream over plain TCP, or None (TLS, another backend,
    or other anyio internals: then reading stays paused while writing, as anyio has it)."""
    transport = getattr(getattr(stream, "_stream", None), "_transport", None)
    return transport if hasattr(transport, "resume_reading") and hasattr(transport, "pause_reading") else None


class Stamped:
    """What a stamping stream keeps, sync or async: the stamps of its latest read and write
    (CLOCK_MONOTONIC ns, 0 before the first) and the backend's number for its connection
    (RequestRecord.connection_id), kept across start_tls."""

    __slots__ = ("_inner", "connection_id", "last_read_ns", "last_write_ns")

    def __init__(self, inner: Any, connection_id: int) -> None:
        self._inner = inner
        self.connection_id = connection_id
        self.last_read_ns = 0
        self.last_write_ns = 0

    def _read_done(self, data: bytes) -> bytes:
        self.last_read_ns = _now_ns()
        io = _request_io.get()
        if io is not None:
            io.bytes_read += len(data)
        return data

    def _writing(self, buffer: bytes) -> None:
        # Stamped before: once the bytes are the kernel's the server may have them before this
        # thread runs again, and an async write then yields to the event loop, whose lag a stamp
        # taken after would add. h11 ends a body with an empty write, after the request was sent.
        if buffer:
            self.last_write_ns = _now_ns()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class SyncStampingStream(Stamped):
    __slots__ = ()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._read_done(self._inner.read(max_bytes, timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._writing(buffer)
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        # TLS wraps the raw stream: stamp the decrypted reads, which is what the parser sees.
        return SyncStampingStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self.connection_id)


class _LoopStamps:
    """Stamps an anyio stream's socket reads and writes where the event loop does them, for an
    asyncio transport over plain TCP. A read is stamped in the protocol's data_received, right
    after the loop's recv() and before the bytes wait in anyio's queue for the reading task, which
    resumes a loop turn or more later (seen: 0.2 ms median, milliseconds while the loop runs other
    tasks): that lag is the loop's, not the network's. A write is stamped in the transport's
    write(), right before its send(): anyio first yields to the loop once.

    Each pending entry is one recv's stamp and how many of its bytes no read has taken yet: anyio
    hands each recv's bytes to one read, or splits them over several."""

    __slots__ = ("_data_received", "_pending", "_stream", "_write")

    def __init__(self, stream: Stamped, protocol: Any, transport: Any) -> None:
        self._stream = stream
        self._pending: collections.deque[list[int]] = collections.deque()
        self._data_received = protocol.data_received
        self._write = transport.write
        # Both are called through the instance (asyncio's selector transport looks them up each
        # time); a loop that caches them (uvloop) or objects without a __dict__ leave them unhooked,
        # and the stream's own stamps stand.
        protocol.data_received = self._received
        transport.write = self._writing

    def _received(self, data: bytes) -> None:
        self._pending.append([_now_ns(), len(data)])
        self._data_received(data)

    def _writing(self, data: bytes) -> None:
        if data:
            self._stream.last_write_ns = _now_ns()
        self._write(data)

    def taken(self, n: int) -> int:
        """The stamp of the recv that brought the last of the next n bytes, or 0 if unknown."""
        pending = self._pending
        stamp = 0
        while n > 0 and pending:
            entry = pending[0]
            stamp = entry[0]
            if entry[1] > n:
                entry[1] -= n
                return stamp
            n -= entry[1]
            pending.popleft()
        return stamp if n == 0 else 0


def _loop_stamps(stream: Stamped, transport: Any) -> _LoopStamps | None:
    """The loop's stamps for an anyio stream over plain TCP on asyncio, or None (then a read is
    stamped when it returns to the task and a write before it is handed to anyio)."""
    protocol = getattr(getattr(stream._inner, "_stream", None), "_protocol", None)
    if transport is None or protocol is None or transport.get_protocol() is not protocol:
        return None
    try:
        return _LoopStamps(stream, protocol, transport)
    except AttributeError:  # an object without a __dict__ (uvloop's transports): nothing to hook
        return None


class AsyncStampingStream(Stamped):
    __slots__ = ("_loop_stamps", "_transport")

    def __init__(self, inner: Any, connection_id: int) -> None:
        super().__init__(inner, connection_id)
        self._transport = _asyncio_transport(inner)
        self._loop_stamps = _loop_stamps(self, self._transport)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._read_done(await self._inner.read(max_bytes, timeout))
        if data and self._loop_stamps is not None:
            # The recv's stamp, once the read is known to have returned its bytes; 0 (unknown)
            # keeps the stamp of the return.
            self.last_read_ns = self._loop_stamps.taken(len(data)) or self.last_read_ns
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._writing(buffer)
        transport = self._transport
        if not buffer or transport is None or transport.is_closing():
            await self._inner.write(buffer, timeout)
            return
        # anyio reads only while someone awaits a read, and httpcore reads after the whole body
        # is written: a server that answers early (413) and resets the connection would have its
        # answer thrown away with the socket. Reading meanwhile queues it for httpcore's read.
        transport.resume_reading()
        try:
            await self._inner.write(buffer, timeout)
        finally:
            if not transport.is_closing():
                transport.pause_reading()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        # TLS wraps the raw stream: stamp the decrypted reads, which is what the parser sees.
        inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return AsyncStampingStream(inner, self.connection_id)


class StampingBackend:
    """What a stamping backend keeps, sync or async: the backend it wraps, and the numbering of
    the connections it opens (one per connection)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._ids = itertools.count(1)

    def _opening(self) -> RequestIO | None:
        io = _request_io.get()
        if io is not None:
            io.new_connection = True  # also when the connect then fails: the request is not re-sent
        return io

    def _opened(self, stream: Stamped, io: RequestIO | None) -> Any:
        if io is not None:
            io.connection_id = stream.connection_id
        return stream


class SyncStampingBackend(StampingBackend):
    """httpcore's NetworkBackend (or httpcore2's), stamping."""

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        io = self._opening()
        return self._opened(SyncStampingStream(self._inner.connect_tcp(*args, **kwargs), next(self._ids)), io)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return SyncStampingStream(self._inner.connect_unix_socket(*args, **kwargs), next(self._ids))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncStampingBackend(StampingBackend):
    """httpcore's AsyncNetworkBackend (or httpcore2's), stamping."""

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        io = self._opening()
        stream = AsyncStampingStream(await self._inner.connect_tcp(*args, **kwargs), next(self._ids))
        return self._opened(stream, io)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return AsyncStampingStream(await self._inner.connect_unix_socket(*args, **kwargs), next(self._ids))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
