"""Where finished records go: in memory (Collector), to a JSONL journal written by a thread of its
own (so the application's event loop never waits for the disk), to a callback, or into the last N
plus running summaries (BoundedCollector, constant memory).

summary() is results.json's summary (docs/results.md), computed by pytps.measure.summary, the code a run
uses; per tag with summary(tag=...).
"""

from __future__ import annotations

import atexit
import json
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytps.embed.context import sinks
from pytps.results.record import Record

_ALL: Any = object()  # summary(): every record, whatever its tag


class _JournalWriter:
    """Appends each record's as_dict() as a JSON line from a daemon thread. The caller only puts
    the record on a queue (never blocks); the fields are computed and written on the thread, and
    each line is flushed at once. close() (also at exit) writes what is queued."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the collector
        self._queue: queue.SimpleQueue[Record | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name="pytps-journal", daemon=True)
        self._thread.start()
        self._closed = False
        atexit.register(self.close)

    def put(self, record: Record) -> None:
        self._queue.put(record)

    def _write(self) -> None:
        while True:
            record = self._queue.get()
            if record is None:
                break
            try:
                self._f.write(json.dumps(record.as_dict(), separators=(",", ":")) + "\n")
                self._f.flush()
            except (OSError, ValueError, TypeError):  # a full disk must not stop the application
                continue
        self._f.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        atexit.unregister(self.close)


class Collector:
    """Receives the records of instrumented calls.

    keep: hold them in memory (`.records`, `.summary()`); journal: also append each as a JSON line
    (the fields of requests.jsonl) to this file, from a thread of its own; callback: also call
    this with each record, on the thread (or event loop) that finished the call: keep it quick.
    """

    def __init__(
        self,
        *,
        keep: bool = True,
        journal: str | Path | None = None,
        callback: Callable[[Record], None] | None = None,
    ) -> None:
        self._records: list[Record] | None = [] if keep else None
        self._journal = _JournalWriter(journal) if journal is not None else None
        self._callback = callback
        self._lock = threading.Lock()

    def add(self, record: Record) -> None:
        if self._records is not None:
            self._records.append(record)  # atomic under the GIL: threads may add at once
        if self._journal is not None:
            self._journal.put(record)
        if self._callback is not None:
            try:
                self._callback(record)
            except Exception as exc:  # the application's call must go on as without pytps
                import warnings

                warnings.warn(f"pytps: the collector's callback raised {type(exc).__name__}: {exc}", stacklevel=2)

    @property
    def records(self) -> list[Record]:
        """The records kept, in finishing order (a copy)."""
        return list(self._records or ())

    def __len__(self) -> int:
        return len(self._records or ())

    def tags(self) -> list[str | None]:
        """The tags the kept records carry, in first-seen order."""
        return list(dict.fromkeys(r.tag for r in self._records or ()))

    def summary(self, tag: str | None = _ALL) -> dict[str, Any]:
        """results.json's summary of the kept records (of one tag's, given tag; None: untagged)."""
        records = self._records or []
        chosen = records if tag is _ALL else [r for r in records if r.tag == tag]
        return summarize_records(chosen)

    def summaries(self) -> dict[str | None, dict[str, Any]]:
        """summary() per tag."""
        return {t: self.summary(t) for t in self.tags()}

    def clear(self) -> None:
        if self._records is not None:
            self._records.clear()

    def close(self) -> None:
        """Writes what the journal has queued and closes it (also done at exit)."""
        if self._journal is not None:
            self._journal.close()


class BoundedCollector(Collector):
    """For long-lived applications: the last `max_records` records, plus running summaries of all
    of them (and per tag) in constant memory (pytps.embed.bounded)."""

    def __init__(
        self,
        max_records: int = 1000,
        *,
        journal: str | Path | None = None,
        callback: Callable[[Record], None] | None = None,
    ) -> None:
        from pytps.errors import ConfigError

        if not isinstance(max_records, int) or max_records < 1:
            raise ConfigError(f"BoundedCollector(max_records={max_records!r}): give a whole number >= 1")
        super().__init__(keep=False, journal=journal, callback=callback)
        self.max_records = max_records
        self._last: deque[Record] = deque(maxlen=max_records)
        self._running: dict[Any, Any] = {}

    def add(self, record: Record) -> None:
        from pytps.embed.bounded import RunningSummary

        self._last.append(record)
        with self._lock:
            for key in (_ALL, record.tag):
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = RunningSummary()
                running.add(record)
        super().add(record)

    @property
    def records(self) -> list[Record]:
        """The last max_records records, oldest first."""
        return list(self._last)

    def __len__(self) -> int:
        return len(self._last)

    def tags(self) -> list[str | None]:
        return [k for k in self._running if k is not _ALL]

    def summary(self, tag: str | None = _ALL) -> dict[str, Any]:
        """The running summary of every record added (not only the kept ones); the same keys as
        results.json's summary, percentiles from histograms (docs/embedding.md)."""
        from pytps.embed.bounded import RunningSummary

        with self._lock:
            running = self._running.get(tag) or RunningSummary()
            return running.finish()

    def clear(self) -> None:
        with self._lock:
            self._last.clear()
            self._running.clear()


def summarize_records(records: Iterable[Record]) -> dict[str, Any]:
    """results.json's summary of Records that carry their RequestRecord (pytps.measure.summary.summarize)."""
    from pytps.measure.summary import summarize

    return summarize([r.request for r in records if r.request is not None])[0]


def deliver(record: Record, collector: Collector | None) -> None:
    """Hands a finished record to its client's collector and to every collecting() one."""
    if collector is not None:
        collector.add(record)
    for sink in sinks():
        if sink is not collector:
            sink.add(record)
