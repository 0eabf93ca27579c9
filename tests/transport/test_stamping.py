"""transport/stamping: the network streams of the httpx transport and pytps.instrument, over a
real socket to the emulator, through httpcore's own backends (sync and async)."""

from __future__ import annotations

import asyncio
import contextvars

import httpcore

import pytps
from pytps._native import _core
from pytps.transport.stamping import AsyncStampingBackend, SyncStampingBackend, current_request, watch_request

HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _check(stream, io, t_before_ns: int, answer: bytes) -> None:
    assert answer.startswith(b"HTTP/1.1 200") and io.bytes_read == len(answer)
    # The write is stamped before it, the read right after it returned: in that order, once each.
    assert t_before_ns <= stream.last_write_ns <= stream.last_read_ns <= _core.now_ns()
    assert io.new_connection and io.connection_id == stream.connection_id


def test_a_sync_stream_stamps_its_reads_and_writes_and_numbers_its_connections():
    contextvars.copy_context().run(_sync_exchanges)  # watch_request() sets a context variable


def _sync_exchanges() -> None:
    with pytps.Emulator() as emu:
        backend = SyncStampingBackend(httpcore.SyncBackend())
        for number in (1, 2):
            io = watch_request()
            assert current_request() is io
            t0 = _core.now_ns()
            stream = backend.connect_tcp("127.0.0.1", emu.port)
            try:
                stream.write(HEALTH)
                answer = stream.read(65536)
            finally:
                stream.close()
            _check(stream, io, t0, answer)
            assert stream.connection_id == number
            stream.write(b"")  # h11's empty write ending a body: no stamp of its own
            assert stream.last_write_ns <= stream.last_read_ns


def test_an_async_stream_does_the_same_on_anyio():
    async def main(port: int) -> None:
        backend = AsyncStampingBackend(httpcore.AnyIOBackend())
        io = watch_request()
        t0 = _core.now_ns()
        stream = await backend.connect_tcp("127.0.0.1", port)
        try:
            await stream.write(HEALTH)
            answer = await stream.read(65536)
        finally:
            await stream.aclose()
        _check(stream, io, t0, answer)

    with pytps.Emulator() as emu:
        asyncio.run(main(emu.port))
