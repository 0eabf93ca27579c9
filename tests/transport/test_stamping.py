"""transport/stamping: the network streams of the httpx transport and pytps.instrument, over a
real socket to the emulator, through httpcore's own backends (sync and async)."""

from __future__ import annotations

import asyncio
import contextvars
import time

import httpcore
import hypothesis
import hypothesis.strategies as st
import pytest

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


def test_an_async_read_is_stamped_when_the_loop_received_it_not_when_the_task_resumed(monkeypatch):
    # Between the loop's recv() and the reading task's turn, a callback holds the loop for 3 ms
    # (as another task of an application would): the read's stamp is the recv's, before it.
    import anyio._backends._asyncio as anyio_asyncio

    hold_s = 0.003
    received = anyio_asyncio.StreamProtocol.data_received

    def data_received_then_busy(self, data):
        asyncio.get_running_loop().call_soon(time.sleep, hold_s)  # runs before the reader wakes
        received(self, data)

    monkeypatch.setattr(anyio_asyncio.StreamProtocol, "data_received", data_received_then_busy)

    async def main(port: int) -> None:
        stream = await AsyncStampingBackend(httpcore.AnyIOBackend()).connect_tcp("127.0.0.1", port)
        try:
            t_write_ns = _core.now_ns()
            await stream.write(HEALTH)
            answer = await stream.read(65536)
            t_returned_ns = _core.now_ns()
        finally:
            await stream.aclose()
        assert answer.startswith(b"HTTP/1.1 200")
        assert t_write_ns <= stream.last_write_ns <= stream.last_read_ns
        assert t_returned_ns - stream.last_read_ns >= hold_s * 1e9

    with pytps.Emulator() as emu:
        asyncio.run(main(emu.port))


class _Protocol:
    def __init__(self) -> None:
        self.queued: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        self.queued.append(data)


class _Transport:
    def __init__(self, protocol: _Protocol) -> None:
        self.protocol = protocol
        self.written: list[bytes] = []

    def get_protocol(self) -> _Protocol:
        return self.protocol

    def write(self, data: bytes) -> None:
        self.written.append(data)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    recvs=st.lists(st.integers(1, 50), min_size=1, max_size=12),
    cuts=st.lists(st.integers(1, 600), max_size=20),
)
def test_each_read_carries_the_stamp_of_the_recv_that_brought_its_last_byte(recvs, cuts):
    from pytps.transport import stamping

    stamps = iter(range(1000, 10**6, 1000))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stamping, "_now_ns", lambda: next(stamps))
        protocol = _Protocol()
        transport = _Transport(protocol)
        stream = stamping.Stamped(None, 1)
        loop_stamps = stamping._LoopStamps(stream, protocol, transport)
        for size in recvs:
            protocol.data_received(b"x" * size)  # as the transport calls it: through the instance
        # Every recv took one stamp, in order: 1000, 2000, ...
        stamp_of_byte = [1000 * (i + 1) for i, size in enumerate(recvs) for _ in range(size)]
        assert b"".join(protocol.queued) == b"x" * sum(recvs)  # passed on, unchanged
        at = 0
        for cut in [*cuts, sum(recvs)]:  # reads of any sizes, the last one takes what remains
            n = min(cut, len(stamp_of_byte) - at)
            if n == 0:
                break
            assert loop_stamps.taken(n) == stamp_of_byte[at + n - 1]
            at += n
        assert loop_stamps.taken(1) == 0  # more than was received: unknown
        transport.write(b"GET")
        assert transport.written == [b"GET"] and stream.last_write_ns == 1000 * (len(recvs) + 1)
        transport.write(b"")  # an empty write leaves the stamp
        assert stream.last_write_ns == 1000 * (len(recvs) + 1)
