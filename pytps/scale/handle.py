"""What the driver holds of each worker, whichever backend runs it (local processes or Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pytps.scale.clock import ClockReading
from pytps.scale.worker import WorkerJob, WorkerResult


class WorkerHandle(Protocol):
    worker: int

    def clock_reading(self) -> ClockReading:
        """A round trip to the worker for its clocks (blocks)."""

    def start(self, job: WorkerJob) -> None:
        """Start the worker's run (returns at once; it sends its probe, then waits for go)."""

    def snapshot(self) -> dict[str, Any] | None:
        """The worker's latest counters and phase (None before the first arrives)."""

    def go(self, t0_ns: int) -> None: ...
    def stop(self, reason: str | None) -> None: ...
    def interrupt(self) -> None: ...

    def result(self) -> WorkerResult | None:
        """The worker's result once it ended (a failed worker's says why), else None."""

    def sync_files(self, directory: Path) -> None:
        """Bring the worker's journal and event log up to date in `directory` (the driver's copy)."""

    def close(self) -> None:
        """End the worker (kills it if it is still running)."""
