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
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from typing import Any

from .._native import _core
from ..records import (
    ERROR_CLIENT,
    ERROR_CONNECT,
    ERROR_TIMEOUT,
    MAX_RESPONSE_BYTES,
    RequestRecord,
    response_too_large_detail,
)
from .base import RequestSpec
from .http1 import Http1Target, fill_from_http

_now_ns = _core.now_ns


class _Connection(asyncio.Protocol):
    """One keep-alive connection; serves one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.recorder: Any = None
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self.last_data_ns = 0
        self.bytes_read = 0  # of the current response
        self.too_large = False

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
            return  # bytes with no request waiting: the connection is not reusable
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
        rec = self.recorder
        if rec is not None and not rec.message_done:
            rec.finish_eof(_now_ns())
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


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
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
        total_timeout_s: float | None = None,
    ) -> None:
        self._target = Http1Target(base_url, self.name)
        self.base_url = self._target.base_url
        self.host = self._target.host
        self.port = self._target.port
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self.total_timeout_s = total_timeout_s
        self._idle: deque[_Connection] = deque()
        self._open: set[_Connection] = set()

    async def aclose(self) -> None:
        for conn in list(self._open):
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
        self._open.clear()

    async def _connection(self) -> tuple[_Connection, bool]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn, True
            self._open.discard(conn)
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(_Connection, self.host, self.port), self.connect_timeout_s
        )
        self._open.add(conn)
        return conn, False

    async def send(self, spec: RequestSpec) -> RequestRecord:
        rec = spec.new_record(self.name)
        payload = self._target.render(spec)
        rec.t_submit_ns = _now_ns()
        try:
            t_connect = _now_ns()
            conn, reused = await self._connection()
            if not reused:
                rec.phases_ns["connect"] = _now_ns() - t_connect
        except (asyncio.TimeoutError, TimeoutError) as exc:
            return self._failed(rec, ERROR_TIMEOUT, f"connect timed out after {self.connect_timeout_s} s ({exc})")
        except OSError as exc:
            return self._failed(rec, ERROR_CONNECT, f"{type(exc).__name__}: {exc}")
        recorder = _core.HttpStreamRecorder(spec.dialect)
        loop = asyncio.get_running_loop()
        conn.recorder = recorder
        conn.done = loop.create_future()
        conn.bytes_read = 0
        assert conn.transport is not None
        rec.t_send_ns = _now_ns()
        conn.transport.write(payload)
        error: str | None = None
        try:
            await self._wait(conn, rec.t_send_ns)
        except TimeoutError as exc:
            error = str(exc)
            conn.transport.abort()
        except asyncio.CancelledError:
            conn.transport.abort()
            raise
        t_end = _now_ns()
        recorder.close(t_end)
        rec.t_done_ns = t_end
        fill_from_http(rec, recorder, error)
        if conn.too_large:
            rec.error, rec.error_detail = ERROR_CLIENT, response_too_large_detail(MAX_RESPONSE_BYTES)
        conn.recorder = None
        conn.done = None
        if recorder.message_done and recorder.keep_alive and not conn.closed and error is None:
            self._idle.append(conn)
        else:
            if conn.transport is not None:
                conn.transport.close()
            self._open.discard(conn)
        return rec

    async def _wait(self, conn: _Connection, t_send: int) -> None:
        """Waits for the response to end; idle and total timeouts checked by a coarse timer
        (re-arming a timer on every read would cost more than the read itself)."""
        assert conn.done is not None
        read_ns = int(self.read_timeout_s * 1e9)
        total_ns = int(self.total_timeout_s * 1e9) if self.total_timeout_s else None
        conn.last_data_ns = t_send
        while True:
            now = _now_ns()
            idle_left = conn.last_data_ns + read_ns - now
            if idle_left <= 0:
                raise TimeoutError(f"no data for {self.read_timeout_s} s (read timeout)")
            if total_ns is not None and now - t_send >= total_ns:
                raise TimeoutError(f"the response took longer than {self.total_timeout_s} s (total timeout)")
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
