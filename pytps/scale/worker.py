"""One worker of a scaled run: the same code whether it lives in a process of this host
(pytps.scale.local) or in a Ray actor (pytps.scale.ray_backend).

A worker is a Runner (pytps.runner.loop) over its share of the run (pytps.scale.share), through
the runner's hooks (no loop of its own):
- it sends its probe, then waits at the start barrier (WorkerCore.start) for the driver's `go`
  with the run's t0 on its own clock (rate mode), so all workers start together;
- the driver's stop reaches it as the runner's request_stop;
- writes its own results folder as requests finish (journal, event log), so its finished
  requests survive its death, and keeps the event log at the end for the driver's merge;
- hands back its per-token histograms as Histogram.to_bytes, and answers the driver's
  clock readings, snapshots, stop and interrupt from another thread while it runs.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from pytps.errors import PytpsError
from pytps.measure.metrics import RequestMetrics
from pytps.measure.records import ABSOLUTE_TIMES, RequestRecord
from pytps.results.event_log import read_chunks
from pytps.results.files import EVENT_LOG
from pytps.results.folder import GRADING_DONE
from pytps.results.output import RunOutput, RunResult, write_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.scale.clock import ClockReading, read_clocks
from pytps.scale.share import Share


@dataclass
class WorkerJob:
    """What a worker runs: make_config's settings (model, key and salt already fixed by the
    driver, so every worker builds the same requests), its share, and its results folder."""

    base_url: str
    settings: dict[str, Any] = field(repr=False)  # holds the API key
    share: Share
    skew_ns: int = 0  # tests: pretend this worker's clock is off by this much


@dataclass
class WorkerResult:
    worker: int
    metadata: dict[str, Any] = field(default_factory=dict)
    histograms: dict[str, bytes] | None = None
    interrupted: bool = False
    stopped_reason: str | None = None
    error: str | None = None  # the worker failed: why
    error_type: str | None = None  # a PytpsError subclass' name: the driver raises the same


def shift_record(rec: RequestRecord, shift_ns: int) -> None:
    """Moves a record's absolute times by shift_ns (durations do not change)."""
    for name in ABSOLUTE_TIMES:  # what a skewed clock (tests) moves
        value = getattr(rec, name)
        if value is not None:
            setattr(rec, name, value + shift_ns)
    rec.output_times_ns = rec.output_times_ns + shift_ns
    if len(rec.output_kernel_times_ns):
        rec.output_kernel_times_ns = rec.output_kernel_times_ns + shift_ns


class WorkerOutput(RunOutput):
    """A worker's results folder: a RunOutput that keeps its event log (the driver merges it)
    and its per-token histograms as bytes."""

    skew_ns = 0
    histograms: dict[str, bytes] | None = None

    def _shift(self, rec: RequestRecord) -> None:
        """Once per request: one journaled while graded is shifted then, not again at add()."""
        if self.skew_ns and rec.index not in self._pending:
            shift_record(rec, self.skew_ns)

    def journal_pending(self, rec: RequestRecord) -> None:
        self._shift(rec)
        super().journal_pending(rec)

    def add(self, rec: RequestRecord, grading: str = GRADING_DONE) -> RequestMetrics:
        self._shift(rec)
        return super().add(rec, grading)

    def finish(self, metadata: dict[str, Any], envelope: dict[str, Any] | None = None) -> RunResult:
        # A worker's envelope verdict is the driver's to give, on the merged run (scale.merge).
        self.journal.close()
        self.events.close()
        summary = self.summary.finish(read_chunks(self.out_dir / EVENT_LOG))
        self.summary.close()
        write_results(self.out_dir, metadata, summary)
        self.histograms = self.summary.token_histograms()
        return RunResult(out_dir=self.out_dir, metadata=metadata, summary=summary, records=[])


class WorkerCore:
    """The worker's side of the protocol; every method but run() may be called from another
    thread while run() goes."""

    def __init__(self, worker: int, skew_ns: int = 0) -> None:
        self.worker = worker
        self.skew_ns = skew_ns
        self.go_event = threading.Event()
        self.t0_ns = 0
        self.phase = "starting"  # starting, ready (at the barrier), running, done, failed
        self.schedule_lead_ns = 0
        self._runner: Runner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._stop_reason: str | None = None
        self._stopped = False
        self._interrupted = False
        self._lock = threading.Lock()

    def clock_reading(self) -> ClockReading:
        return read_clocks(self.skew_ns)

    def ready(self, schedule_lead_ns: int) -> None:
        self.schedule_lead_ns = schedule_lead_ns
        self.phase = "ready"

    async def start(self, schedule_lead_ns: int) -> int | None:
        """The runner's start barrier: waits for the driver's go; the run's t0 on this process's
        CLOCK_MONOTONIC (None: stopped before it came)."""
        self.ready(schedule_lead_ns)
        while not self.go_event.is_set():
            if self._stopped or (self._runner is not None and self._runner.stopping):
                return None
            await asyncio.sleep(0.002)
        return self.t0_ns - self.skew_ns

    def go(self, t0_ns: int) -> None:
        """Start sending; t0_ns: the run's t0 on this worker's clock (rate mode)."""
        self.t0_ns = t0_ns
        self.phase = "running"
        self.go_event.set()

    def stop(self, reason: str | None = None) -> None:
        """Send nothing more; the requests in flight finish."""
        with self._lock:
            self._stopped = True
            self._stop_reason = self._stop_reason or reason
            if self._runner is not None:
                self._runner.request_stop(reason)

    def interrupt(self) -> None:
        """As Ctrl-C in a single process: requests in flight are cancelled, what finished is kept."""
        with self._lock:
            self._interrupted = True
            if self._loop is not None and self._task is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)

    def snapshot(self) -> dict[str, Any]:
        runner = self._runner
        counters = runner.counters() if runner is not None else {}
        if counters.get("t_measure_start_ns") is not None:
            counters["t_measure_start_ns"] += self.skew_ns  # on the worker's (skewed) clock
        return {"worker": self.worker, "phase": self.phase, "schedule_lead_ns": self.schedule_lead_ns, **counters}

    def run(self, job: WorkerJob) -> WorkerResult:
        """The whole run of this worker, on an event loop of its own (blocks)."""
        from pytps.runner.event_loop import run_coroutine

        try:
            cfg = make_config(job.base_url, **job.settings)
            cfg.store_as = None  # a share of the run: the driver records the merged run
            runner = Runner(cfg, share=job.share, start=self.start)
            runner.output_type = type("SkewedWorkerOutput", (WorkerOutput,), {"skew_ns": job.skew_ns})
            with self._lock:
                self._runner = runner
                if self._stopped:
                    runner.request_stop(self._stop_reason)
            result = run_coroutine(self._main(runner))
        except PytpsError as exc:
            self.phase = "failed"
            return WorkerResult(self.worker, error=str(exc), error_type=type(exc).__name__)
        except BaseException as exc:  # reported to the driver, which decides
            self.phase = "failed"
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return WorkerResult(self.worker, error=detail)
        self.phase = "done"
        output = runner._output
        return WorkerResult(
            self.worker,
            metadata=result.metadata,
            histograms=output.histograms if isinstance(output, WorkerOutput) else None,
            interrupted=result.interrupted,
            stopped_reason=result.stopped_reason,
        )

    async def _main(self, runner: Runner) -> RunResult:
        with self._lock:
            self._loop = asyncio.get_running_loop()
            task = asyncio.ensure_future(runner.run())
            self._task = task
            if self._interrupted:
                task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            # Cancelled before the run could catch it (resolving the model): nothing measured.
            raise PytpsError("interrupted before the first request") from None
