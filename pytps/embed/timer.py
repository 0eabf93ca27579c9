"""Timing any byte stream: StreamTimer for code that reads sockets itself (fed `(bytes, t_ns)`),
and time_stream() for an iterator or async iterator of bytes (each chunk stamped on arrival).
Both close into the same Record as an instrumented SDK call.

The stamping path loads no numpy: a first `pytps.time_stream` of a process, called between the
user's `t_send = pytps.now_ns()` and the first read, must not spend the ~0.1 s of numpy's import
there (issue 29). The record, its arrays and the collector are built in close(), after the last stamp.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pytps._native import _core
from pytps.embed.context import current_tag

if TYPE_CHECKING:
    from pytps.embed.collector import Collector
    from pytps.results.record import Record

_now_ns = _core.now_ns


def check_dialect(dialect: Any) -> str:
    if dialect not in _core.DIALECTS:
        from pytps.errors import ConfigError

        raise ConfigError(f"unknown dialect {dialect!r}; choose one of {', '.join(_core.DIALECTS)}")
    return str(dialect)


class StreamTimer:
    """Times one response stream that the caller reads: feed(data, t_ns) each read's bytes with
    the CLOCK_MONOTONIC ns taken right after the read (pytps.now_ns()), then close().

    TTFT runs from t_send_ns (when the request's last byte was written), else from the
    StreamTimer's creation. The record goes to `collector` and to any pytps.collecting() one.
    """

    def __init__(self, dialect: str, t_send_ns: int | None = None, *, collector: Collector | None = None) -> None:
        self.dialect = check_dialect(dialect)
        self._recorder = _core.StreamRecorder(self.dialect)
        now = _now_ns()
        self._t_submit_ns = now
        self._t_send_ns = int(t_send_ns) if t_send_ns is not None else now
        self._t_first_ns: int | None = None
        self._collector = collector
        self._tag = current_tag()
        self._last_ns: int | None = None
        self.record: Record | None = None  # set by close()

    def feed(self, data: bytes | bytearray | memoryview, t_ns: int) -> int:
        """One read's bytes and its stamp; returns the output-bearing events they completed."""
        if self._last_ns is None:
            self._t_first_ns = t_ns  # the first byte: TTFB
        self._last_ns = t_ns
        return self._recorder.feed(data, t_ns)

    def close(self, t_ns: int | None = None, error: BaseException | None = None) -> Record:
        """The end of the stream (at t_ns, else the last read's stamp), or the exception that ended
        it; returns the record (again on later calls)."""
        if self.record is not None:
            return self.record
        # Loaded here, after the last stamp (numpy among them): see the module's docstring.
        from pytps.embed.collector import deliver
        from pytps.measure.records import ERROR_CLIENT, RequestRecord
        from pytps.results.record import Record, next_index
        from pytps.transport.base import classify_stream
        from pytps.transport.classify import error_class

        recorder = self._recorder
        rec = RequestRecord(index=next_index(), transport="stream_timer")
        rec.t_submit_ns, rec.t_send_ns = self._t_submit_ns, self._t_send_ns
        if self._t_first_ns is not None:
            rec.t_headers_ns = self._t_first_ns
        t_end = t_ns if t_ns is not None else (self._last_ns if self._last_ns is not None else _now_ns())
        recorder.close(t_end)
        rec.t_done_ns = t_end
        rec.status = 200 if self._last_ns is not None else None
        rec.fill_from_recorder(recorder)
        if error is not None:
            rec.error = error_class(error, response_started=self._last_ns is not None)
            if rec.error == ERROR_CLIENT and isinstance(error, GeneratorExit):
                rec.error_detail = "the application stopped reading before the end of the stream"
            else:
                rec.error_detail = f"{type(error).__name__}: {error}"
        else:
            classify_stream(rec, recorder.error)
        self.record = Record(
            rec,
            {"call_id": None, "attempt": None, "tag": self._tag, "dialect": self.dialect, "streamed": True},
        )
        deliver(self.record, self._collector)
        return self.record


class TimedStream:
    """What time_stream() returns: iterate it (sync or async, as the source) to get the chunks,
    unchanged; `.record` once the source is exhausted or failed; consume()/aconsume() do both."""

    def __init__(self, chunks: Iterable[bytes] | AsyncIterable[bytes], timer: StreamTimer) -> None:
        self._chunks = chunks
        self.timer = timer

    @property
    def record(self) -> Record | None:
        return self.timer.record

    def __iter__(self) -> Iterator[bytes]:
        if not isinstance(self._chunks, Iterable):
            raise TypeError("time_stream() of an async iterable: use `async for`")
        with self._closing():
            yield from self._stamped(self._chunks)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with self._closing():
            if isinstance(self._chunks, AsyncIterable):
                feed = self.timer.feed
                async for chunk in self._chunks:
                    feed(chunk, _now_ns())
                    yield chunk
            else:
                for chunk in self._stamped(self._chunks):
                    yield chunk

    def _stamped(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        feed = self.timer.feed
        for chunk in chunks:
            feed(chunk, _now_ns())
            yield chunk

    @contextmanager
    def _closing(self) -> Iterator[None]:
        """Closes the timer when the iteration ends: with the exception that ended it, if any."""
        try:
            yield
        except BaseException as exc:
            self.timer.close(error=exc)
            raise
        self.timer.close()

    def consume(self) -> Record:
        """Reads the whole stream; returns its record."""
        for _ in self:
            pass
        return self.timer.close()

    async def aconsume(self) -> Record:
        async for _ in self:
            pass
        return self.timer.close()


def time_stream(
    chunks: Iterable[bytes] | AsyncIterable[bytes],
    dialect: str,
    t_send_ns: int | None = None,
    *,
    collector: Collector | None = None,
) -> TimedStream:
    """Times any iterator or async iterator of response-body bytes, stamping each chunk on arrival.
    TTFT runs from t_send_ns when given, else from this call."""
    return TimedStream(chunks, StreamTimer(dialect, t_send_ns, collector=collector))
