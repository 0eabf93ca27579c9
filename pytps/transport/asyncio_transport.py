"""The asyncio transport: plain HTTP/1.1 on asyncio protocols, one native call per socket read.

The event loop calls Protocol.data_received as soon as a read returns: that is where the read
is stamped (the earliest point Python sees the bytes), and the bytes go straight to a native
HttpStreamRecorder, which parses the response head, decodes the chunked body and records the
stream. Per read this costs one Python callback and one C++ call, against the ~100 us of
httpx, httpcore, h11 and anyio layers, so the client keeps up at high token rates and its
stamps stay close to the wire.

Scope: http:// only (https://, HTTP/2 and proxies go through the httpx transport). Requests
are rendered to bytes before t_send, and written with one transport.write (asyncio writes to
the socket at once when it can), stamped right before it.

Connections: the host is resolved once (http1.resolve, as the native transport does) and a new
connection tries each address in turn. A request whose kept-alive connection the server had
closed before any byte of a response is sent again on a new connection (record.retries); a
connection whose request was not all written when its response ended is not reused.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from collections import deque
from typing import Any

from pytps._native import _core
from pytps.measure.records import (
    ERROR_CLIENT,
    ERROR_CONNECT,
    ERROR_NO_RESPONSE,
    ERROR_TIMEOUT,
    MAX_RESPONSE_BYTES,
    RequestRecord,
    no_response_detail,
    response_too_large_detail,
)
from pytps.transport.base import RequestSpec, Timeouts, describe_exception
from pytps.transport.http1 import Http1Target, address_text, fill_from_http, resolve
from pytps.transport.phases import record_send_phases

_now_ns = _core.now_ns


class _Connection(asyncio.Protocol):
    """One keep-alive connection; serves one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.recorder: Any = None
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self.lost: Exception | None = None  # why it closed (None: the server's EOF)
        self.last_data_ns = 0
        self.bytes_read = 0  # of the current response
        self.too_large = False
        self.id = 0  # the transport's number for it (RequestRecord.connection_id), set once connected

    # -- asyncio callbacks: keep them tiny, they run once per read ------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        t = _now_ns()
        self.last_data_ns = t
        rec = self.recorder
        if rec is None:
            # Bytes with no request waiting (a 408 before a close, or garbage): the framing of
            # this connection can no longer be trusted, so it is not reused.
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            return
        self.bytes_read += len(data)
        if self.bytes_read > MAX_RESPONSE_BYTES:
            self.too_large = True
            if self.transport is not None:
                self.transport.abort()
            if self.done is not None and not self.done.done():
                self.done.set_result(None)
            return
        rec.feed(data, t)
        if (rec.message_done or rec.error is not None) and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc
        rec = self.recorder
        if rec is not None and not rec.message_done:
            rec.finish_eof(_now_ns())
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def usable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def how_lost(self) -> str:
        exc = self.lost
        if exc is None:
            return "the server closed the connection"
        if isinstance(exc, OSError) and exc.errno:
            return f"the connection failed: {os.strerror(exc.errno)}"
        return f"the connection failed: {exc}"


class _Stale(Exception):
    """A kept-alive connection the server had closed before any byte of a response."""


class AsyncioTransport:
    """Sends RequestSpecs over pooled HTTP/1.1 connections; returns RequestRecords."""

    name = "asyncio"
    schedule_lead_ns: int = 0  # rate mode: sent when the event loop's sleep ends
    tls_library: str | None = None  # http:// only
    thread_cpu_s: float | None = None  # no thread of its own: its work is the event loop's

    def __init__(
        self,
        base_url: str,
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        self._target = Http1Target(base_url, self.name)
        self.base_url = self._target.base_url
        self.host = self._target.host
        self.port = self._target.port
        self.timeouts = timeouts or Timeouts()
        self._idle: deque[_Connection] = deque()
        self._open: set[_Connection] = set()
        self._addresses: list[str] | None = None
        self._resolving: asyncio.Future[list[str]] | None = None
        self._first_addr = 0  # where a new connection starts: past the last address that failed
        self._conn_ids = itertools.count(1)  # RequestRecord.connection_id: one per connection opened

    async def aclose(self) -> None:
        for conn in list(self._open):
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
        self._open.clear()

    async def _resolved(self) -> list[str]:
        """The server's addresses, resolved once (in a thread: a DNS wait must not stall the loop)."""
        if self._addresses is None:
            if self._resolving is None:
                self._resolving = asyncio.get_running_loop().run_in_executor(None, resolve, self.host, self.port)
            try:
                self._addresses = await asyncio.shield(self._resolving)
            except OSError as exc:
                self._resolving = None  # the next request asks again
                raise OSError(f"cannot resolve {self.host}: {exc}") from exc
        return self._addresses

    async def _connect(self) -> _Connection:
        """A new connection: each address in turn (as happy eyeballs would, one at a time), from
        the one after the last that failed."""
        addresses = await self._resolved()
        loop = asyncio.get_running_loop()
        errors: list[str] = []
        start = self._first_addr
        for k in range(len(addresses)):
            i = (start + k) % len(addresses)
            try:
                _, conn = await loop.create_connection(_Connection, addresses[i], self.port)
            except OSError as exc:
                why = describe_exception(exc)
                errors.append(f"{address_text(addresses[i], self.port)}: {why}" if len(addresses) > 1 else why)
                self._first_addr = (i + 1) % len(addresses)
                continue
            conn.id = next(self._conn_ids)
            self._open.add(conn)
            return conn
        raise OSError("; ".join(errors))

    async def _connection(self, fresh: bool) -> tuple[_Connection, bool]:
        """A pooled connection (unless fresh), else a new one; and whether it was reused."""
        while self._idle and not fresh:
            conn = self._idle.pop()
            if conn.usable():
                return conn, True
            self._open.discard(conn)
        return await asyncio.wait_for(self._connect(), self.timeouts.connect_s), False

    async def send(self, spec: RequestSpec) -> RequestRecord:
        rec = spec.new_record(self.name)
        payload = self._target.render(spec)
        rec.t_submit_ns = _now_ns()
        while True:
            try:
                t_connect = _now_ns()
                # A resend never goes on a pooled connection: it could be as stale as the first.
                conn, reused = await self._connection(fresh=rec.retries > 0)
                if not reused:
                    rec.phases_ns["connect"] = _now_ns() - t_connect
            except (asyncio.TimeoutError, TimeoutError) as exc:
                return self._failed(rec, ERROR_TIMEOUT, f"connect timed out after {self.timeouts.connect_s} s ({exc})")
            except OSError as exc:
                detail = str(exc) if exc.errno is None else f"{type(exc).__name__}: {exc}"
                return self._failed(rec, ERROR_CONNECT, detail)
            try:
                return await self._exchange(conn, reused, rec, payload, spec.dialect)
            except _Stale:
                rec.retries += 1

    async def _exchange(
        self, conn: _Connection, reused: bool, rec: RequestRecord, payload: bytes, dialect: str
    ) -> RequestRecord:
        """One request and its response on conn; raises _Stale to have it sent again."""
        recorder = _core.HttpStreamRecorder(dialect)
        loop = asyncio.get_running_loop()
        conn.recorder = recorder
        conn.done = loop.create_future()
        conn.bytes_read = 0
        assert conn.transport is not None
        rec.connection_id = conn.id
        rec.t_send_ns = _now_ns()
        error: str | None = None
        t_written: int | None = None  # the last byte handed to the kernel, when write() sent it all
        try:
            conn.transport.write(payload)  # sends at once what the socket takes; buffers the rest
            if conn.transport.get_write_buffer_size() == 0:
                t_written = _now_ns()
        except RuntimeError:  # uvloop: the transport closed between the pool and this write
            conn.closed = True
            conn.done.set_result(None)
        try:
            await self._wait(conn, rec.t_send_ns)
        except TimeoutError as exc:
            error = str(exc)
            conn.transport.abort()
        except asyncio.CancelledError:
            conn.transport.abort()
            raise
        t_end = _now_ns()
        conn.recorder = None
        conn.done = None
        recorder.close(t_end)
        if error is None and conn.closed and conn.bytes_read == 0:
            self._open.discard(conn)
            if reused:
                raise _Stale
            rec.t_done_ns = t_end
            fill_from_http(rec, recorder)
            rec.error, rec.error_detail = ERROR_NO_RESPONSE, no_response_detail(conn.how_lost(), rec.retries > 0)
            return rec
        rec.t_done_ns = t_end
        fill_from_http(rec, recorder, error)
        record_send_phases(rec, rec.t_send_ns, t_written)
        if conn.too_large:
            rec.error, rec.error_detail = ERROR_CLIENT, response_too_large_detail(MAX_RESPONSE_BYTES)
        # Bytes of the request still unsent (the server answered early) would be read as the
        # start of the next request: such a connection is closed, whatever the response allowed.
        written = conn.transport.get_write_buffer_size() == 0
        if recorder.message_done and recorder.keep_alive and conn.usable() and error is None and written:
            self._idle.append(conn)
        else:
            conn.transport.close()
            self._open.discard(conn)
        return rec

    async def _wait(self, conn: _Connection, t_send: int) -> None:
        """Waits for the response to end; idle and total timeouts checked by a coarse timer
        (re-arming a timer on every read would cost more than the read itself)."""
        assert conn.done is not None
        read_ns = int(self.timeouts.read_s * 1e9)
        total_ns = int(self.timeouts.total_s * 1e9) if self.timeouts.total_s else None
        conn.last_data_ns = t_send
        while True:
            now = _now_ns()
            idle_left = conn.last_data_ns + read_ns - now
            if idle_left <= 0:
                raise TimeoutError(f"no data for {self.timeouts.read_s} s (read timeout)")
            if total_ns is not None and now - t_send >= total_ns:
                raise TimeoutError(f"the response took longer than {self.timeouts.total_s} s (total timeout)")
            try:
                await asyncio.wait_for(asyncio.shield(conn.done), idle_left / 1e9)
                return
            except asyncio.TimeoutError:
                continue

    def _failed(self, rec: RequestRecord, error: str, detail: str) -> RequestRecord:
        rec.t_done_ns = _now_ns()
        rec.t_send_ns = rec.t_submit_ns or rec.t_done_ns
        rec.error, rec.error_detail = error, detail
        return rec
