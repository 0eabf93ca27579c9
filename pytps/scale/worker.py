"""One worker of a scaled run: the same code whether it lives in a process of this host
(pytps.scale.local) or in a Ray actor (pytps.scale.ray_backend).

A worker is a Runner (pytps.runner.loop) over its share of the run (pytps.scale.share) that
- sends its probe, then waits at the barrier for the driver's `go` with the run's t0 on its own
  clock (rate mode), so all workers start together;
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

from pytps._native import _core
from pytps.errors import PytpsError
from pytps.measure.metrics import RequestMetrics
from pytps.measure.records import RequestRecord
from pytps.results.event_log import read_chunks
from pytps.runner.config import make_config
from pytps.runner.finalize import EVENT_LOG, RunOutput, RunResult, write_results
from pytps.runner.loop import Runner, sleep_until_ns
from pytps.scale.clock import ClockReading, read_clocks
from pytps.scale.share import Share

_now_ns = _core.now_ns

# A record's absolute times: what a skewed clock (tests) moves. Everything else is a duration.
_ABSOLUTE_FIELDS = (
    "t_sched_ns",
    "t_submit_ns",
    "t_send_ns",
    "t_headers_ns",
    "t_done_ns",
    "first_output_ns",
    "first_answer_ns",
    "last_output_ns",
    "end_ns",
)


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
    for name in _ABSOLUTE_FIELDS:
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

    def add(self, rec: RequestRecord) -> RequestMetrics:
        if self.skew_ns:
            shift_record(rec, self.skew_ns)
        return super().add(rec)

    def finish(self, metadata: dict[str, Any], envelope: dict[str, Any] | None = None) -> RunResult:
        # A worker's envelope verdict is the driver's to give, on the merged run (scale.merge).
        self.journal.close()
        self.events.close()
        summary = self.summary.finish(read_chunks(self.out_dir / EVENT_LOG))
        self.summary.close()
        write_results(self.out_dir, metadata, summary)
        self.histograms = self.summary.token_histograms()
        return RunResult(out_dir=self.out_dir, metadata=metadata, summary=summary, records=[])


class WorkerRunner(Runner):
    """A Runner over one share of the run, started by the driver's barrier."""

    def __init__(self, cfg: Any, share: Share, core: WorkerCore) -> None:
        super().__init__(cfg)
        self.share = share
        self.probe_index = share.probe_index
        self.core = core
        self.t_measure_start_ns: int | None = None  # this worker's clock (skew included)

    def request_stop(self, reason: str | None) -> None:
        self._stop = True
        if reason and self.stopped_reason is None:
            self.stopped_reason = reason

    def stop_requested(self) -> bool:
        return self._stop

    def counters(self) -> dict[str, Any]:
        return {
            "finished": self.finished,
            "measured": self._measured,
            "in_flight": self._in_flight,
            "tokens": self._tokens,
            "errors": self._errors,
            "t_measure_start_ns": self.t_measure_start_ns,
        }

    async def _first_request(self, model: str, output: RunOutput, warmup: bool) -> None:
        # Warm-up by the run's rule (index < --warmup), not this worker's: its probe is index k.
        await super()._first_request(model, output, self.share.is_warmup(self.probe_index))

    async def _barrier(self) -> int | None:
        """Waits for the driver's go; the run's t0 on this process's CLOCK_MONOTONIC (None: stop)."""
        self.core.ready(self.transport.schedule_lead_ns)
        while not self.core.go_event.is_set():
            if self._stop:
                return None
            await asyncio.sleep(0.002)
        return self.core.t0_ns - self.core.skew_ns

    def _measuring(self, now_ns: int) -> None:
        if self.t_measure_start_ns is None:
            self.t_measure_start_ns = now_ns + self.core.skew_ns

    async def _concurrency_loop(self, model: str, output: RunOutput) -> None:
        if await self._barrier() is None:
            return
        share, plan = self.share, self.cfg.plan
        indices = share.indices()
        deadline: int | None = None  # the driver stops every worker at the run's; this is a backstop

        def take() -> int | None:
            nonlocal deadline
            if self._stop:
                return None
            i = next(indices, None)
            now = _now_ns()
            if i is None or (deadline is not None and now >= deadline):
                return None
            if not share.is_warmup(i):
                self._measuring(now)
                if deadline is None and plan.duration_s:
                    deadline = now + int(plan.duration_s * 1e9)
            return i

        async def slot() -> None:
            while (i := take()) is not None:
                self._in_flight += 1
                try:
                    rec = await self.transport.send(self._spec(i, model, share.is_warmup(i)))
                finally:
                    self._in_flight -= 1
                self._finish(rec, output)

        await asyncio.gather(*(slot() for _ in range(share.slots or 1)))

    async def _rate_loop(self, model: str, output: RunOutput) -> None:
        t0 = await self._barrier()
        if t0 is None:
            return
        share, plan = self.share, self.cfg.plan
        limit = asyncio.Semaphore(share.slots) if share.slots else None
        tasks: set[asyncio.Task[None]] = set()

        async def one(i: int, t_sched: int) -> None:
            if limit is not None:
                await limit.acquire()
            self._in_flight += 1
            try:
                rec = await self.transport.send(self._spec(i, model, share.is_warmup(i), t_sched))
            finally:
                self._in_flight -= 1
                if limit is not None:
                    limit.release()
            self._finish(rec, output)

        lead_ns = self.transport.schedule_lead_ns
        deadline = t0 + int(plan.duration_s * 1e9) if plan.duration_s else None
        self._measuring(t0)
        for i, offset in share.scheduled(plan.arrivals_ns(self.cfg.seed)):
            t_sched = t0 + int(offset)
            if self._stop or (deadline is not None and t_sched >= deadline):
                break
            if t_sched - lead_ns > _now_ns():
                await sleep_until_ns(t_sched - lead_ns)
                if self.stop_requested():  # set by the driver's thread while this slept
                    break
            task = asyncio.create_task(one(i, t_sched))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)


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
        self._runner: WorkerRunner | None = None
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
        return {"worker": self.worker, "phase": self.phase, "schedule_lead_ns": self.schedule_lead_ns, **counters}

    def run(self, job: WorkerJob) -> WorkerResult:
        """The whole run of this worker, on an event loop of its own (blocks)."""
        from pytps.runner.event_loop import run_coroutine

        try:
            cfg = make_config(job.base_url, **job.settings)
            runner = WorkerRunner(cfg, job.share, self)
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

    async def _main(self, runner: WorkerRunner) -> RunResult:
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
