"""The driver of a scaled run (--workers N, --backend ray): starts the workers, measures their
clocks, deals them the one schedule, starts them together, watches the run as a whole (progress,
--duration, --max-error-rate, worker failures, Ctrl-C), and merges their results exactly.
docs/scale.md is the user's page; this module's parts: share (the schedule dealt), clock (the
offsets), worker (the worker's code), local and ray_backend (where workers live), merge.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps import errors
from pytps._native import _core
from pytps.errors import ConfigError, PytpsError
from pytps.measure.redact import Redactor
from pytps.results.files import JOURNAL
from pytps.results.folder import load_results
from pytps.results.output import RunResult, default_out_dir
from pytps.runner.config import RunConfig, make_config
from pytps.runner.endpoint import Endpoint
from pytps.runner.loop import LIVE_COUNTS, Progress
from pytps.scale.clock import ClockOffset, measure_offset
from pytps.scale.handle import WorkerHandle
from pytps.scale.merge import MergePart, merge_results
from pytps.scale.share import Share, divide
from pytps.scale.worker import WorkerJob, WorkerResult

if TYPE_CHECKING:
    from pytps.runner.scrape_process import ScraperProcess

_now_ns = _core.now_ns

BACKENDS = ("local", "ray")
ON_WORKER_FAILURE = ("continue", "stop")
#: --workers auto: a worker is added while the pilot's client CPU share per worker is above this.
AUTO_BUSY_SHARE = 0.7
_POLL_S = 0.05
# How long the driver waits for the workers to end after Ctrl-C or a stop before killing them.
_END_WAIT_S = 60.0


@dataclass
class ScaleOptions:
    """How a run is scaled out; the defaults are one local worker process."""

    workers: int | str = 1  # or "auto"
    backend: str = "local"
    ray_address: str | None = None
    on_worker_failure: str = "continue"
    # Tests only: worker number -> a skew (ns) added to that worker's clock readings and times.
    skew_ns: dict[int, int] = field(default_factory=dict)

    def check(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"--backend {self.backend!r} is unknown; use one of {', '.join(BACKENDS)}")
        if self.on_worker_failure not in ON_WORKER_FAILURE:
            raise ConfigError(f"--on-worker-failure {self.on_worker_failure!r} is unknown; use continue or stop")
        if self.workers != "auto" and (
            not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 1
        ):
            raise ConfigError(f"--workers must be a whole number >= 1 or 'auto', got {self.workers!r}")


def parse_workers(text: str) -> int | str:
    """--workers' value: N or auto."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        raise ConfigError(f"--workers {text!r} is not a number; write --workers 4 or --workers auto") from None
    if n < 1:
        raise ConfigError(f"--workers must be >= 1, got {n}")
    return n


def auto_workers(cpu_share: float, cores: int, slots: int | None) -> int:
    """docs/scale.md's rule: add a worker while each would be busy over AUTO_BUSY_SHARE of a core
    (the pilot's client CPU share split evenly), up to one per core (and one per slot)."""
    n = 1
    cap = min(cores, slots) if slots else cores
    while n < cap and cpu_share / n > AUTO_BUSY_SHARE:
        n += 1
    return n


@dataclass
class _Worker:
    """The driver's view of one worker during a phase."""

    name: str  # its folder under workers/
    handle: WorkerHandle
    share: Share
    directory: Path
    offset: ClockOffset
    offset_end: ClockOffset | None = None
    result: WorkerResult | None = None
    failure_seen: bool = False


class ScaledRun:
    """One scaled run of cfg's settings."""

    def __init__(
        self,
        base_url: str,
        settings: dict[str, Any],
        options: ScaleOptions,
        progress: Progress | None = None,
        *,
        worker_hook: Callable[[list[WorkerHandle]], None] | None = None,
    ) -> None:
        options.check()
        settings = dict(settings)
        scaled_out = (("turns", "--turns"), ("sessions", "--sessions"), ("trace", "--trace"))
        for key, flag in scaled_out:
            if settings.get(key) not in (None, False):
                # Each worker's Runner is driven by the shared schedule, not by sessions or a trace's own.
                raise ConfigError(f"{flag} runs in one process: drop --workers / --backend ray for it")
        if settings.get("dataset") is None and settings.get("salt") is None:
            # One salt for every worker, so that they build the very prompts one process would.
            settings["salt"] = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        self.cfg: RunConfig = make_config(base_url, **settings)
        # --server-metrics: the driver scrapes, once for the run (its clock is the one the workers'
        # stamps are merged onto); the workers do not.
        for key in ("server_metrics", "server_metrics_interval", "server_metrics_headers", "server_metrics_raw"):
            settings.pop(key, None)
        # What the driver writes of --server-metrics (metadata, the scraper's warnings) is masked alike.
        self._redactor = Redactor(self.cfg.secrets)
        self._scraper: ScraperProcess | None = None
        settings["api_key"] = self.cfg.api_key
        settings["api_key_env"] = None
        settings["max_error_rate"] = None  # the driver judges the run's error rate as a whole
        self.base_url = base_url
        self.settings = settings
        self.options = options
        self.progress = progress or Progress()
        self.worker_hook = worker_hook  # tests: sees the handles of the measured phase once they run
        self.workers: list[_Worker] = []
        self.failures: list[dict[str, Any]] = []
        self.stopped_reason: str | None = None
        self.interrupted = False
        self._stopping = False
        self._backend: Any = None
        self._auto: dict[str, Any] | None = None
        self._started = False  # the measured phase's workers were told to go
        self._done_before = 0  # requests finished in earlier phases (the auto pilot's)

    # ---- workers ----------------------------------------------------------------------------

    def _spawn(self, names: list[str]) -> list[WorkerHandle]:
        skews = [self.options.skew_ns.get(i, 0) for i in range(len(names))]
        if self.options.backend == "ray":
            from pytps.scale.ray_backend import RayBackend

            if self._backend is None:
                self._backend = RayBackend(self.options.ray_address)
            handles: list[WorkerHandle] = self._backend.spawn(len(names), skews)
            return handles
        from pytps.scale.local import LocalWorker

        return [LocalWorker(i, skew) for i, skew in enumerate(skews)]

    def _start_phase(self, shares: list[Share], names: list[str], out_dir: Path) -> list[_Worker]:
        handles = self._spawn(names)
        phase = []
        for handle, share, name in zip(handles, shares, names, strict=True):
            offset = measure_offset(handle.clock_reading)
            directory = out_dir / "workers" / name
            # A folder of an earlier run here would be appended to: this run's worker starts afresh.
            shutil.rmtree(directory, ignore_errors=True)
            settings = {**self.settings, "out": str(directory)}
            if self.options.backend == "ray":
                settings["out"] = None  # the actor's own folder on its node; copied here as it goes
            handle.start(WorkerJob(self.base_url, settings, share, self.options.skew_ns.get(share.worker, 0)))
            phase.append(_Worker(name, handle, share, directory, offset))
        return phase

    def _stop_all(self, phase: list[_Worker], reason: str | None) -> None:
        if reason and self.stopped_reason is None:
            self.stopped_reason = reason
        self._stopping = True
        for w in phase:
            w.handle.stop(reason)

    def _note_failures(self, phase: list[_Worker]) -> None:
        for w in phase:
            result = w.handle.result()
            if result is None or result.error is None or w.failure_seen:
                continue
            w.failure_seen = True
            w.result = result
            if result.error_type is not None and not self._started:
                # A bad key, path or model (the worker's probe): the run fails as one process would.
                for other in phase:
                    other.handle.interrupt()
                error_class = getattr(errors, result.error_type, PytpsError)
                raise error_class(result.error)
            self.failures.append({"worker": w.name, "error": result.error})
            if self.options.on_worker_failure == "stop":
                self._stop_all(phase, f"worker {w.name} failed ({result.error}); --on-worker-failure stop")

    def _wait_ready(self, phase: list[_Worker]) -> None:
        while True:
            self._note_failures(phase)
            pending = [w for w in phase if not w.failure_seen and (w.handle.snapshot() or {}).get("phase") != "ready"]
            if not pending:
                return
            time.sleep(_POLL_S / 5)

    def _start_scraper(self, out_dir: Path) -> None:
        """--server-metrics: the first scrapes, just before the first phase's workers start."""
        sm = self.cfg.server_metrics
        if sm is None or self._scraper is not None:
            return
        from pytps.runner.scrape_process import ScraperProcess

        self._scraper = ScraperProcess.for_run(sm, out_dir, insecure=self.cfg.insecure, redactor=self._redactor)
        self._scraper.start()

    def _stop_scraper(self) -> None:
        """The last scrapes, just after the last worker ended."""
        if self._scraper is not None:
            self._scraper.stop()

    def _go(self, phase: list[_Worker]) -> None:
        """Every worker starts at the run's t0: a little after now, so each worker's transport
        has its schedule lead, and the slowest clock exchange is past."""
        snaps = [w.handle.snapshot() or {} for w in phase]
        lead = max((s.get("schedule_lead_ns", 0) for s in snaps), default=0)
        t0 = _now_ns() + lead + 20_000_000
        for w in phase:
            w.handle.go(t0 - w.offset.offset_ns)
        self._started = True

    def _watch(self, phase: list[_Worker], t_start: int, measured_phase: bool) -> None:
        plan = self.cfg.plan
        deadline: int | None = None
        limit = self.cfg.max_error_rate
        if self.worker_hook is not None and measured_phase:
            self.worker_hook([w.handle for w in phase])
        while True:
            self._note_failures(phase)
            snaps = [(w, w.handle.snapshot() or {}) for w in phase]
            total = {name: sum(s.get(name, 0) for _, s in snaps) for name in LIVE_COUNTS}
            measured, errs = total["measured"], total["errors"]
            self.progress.update(
                total["finished"] + self._done_before,
                total["in_flight"],
                total["tokens"],
                errs,
                (_now_ns() - t_start) / 1e9,
            )
            if measured_phase and plan.mode == "concurrency" and plan.duration_s and deadline is None:
                starts = [s["t_measure_start_ns"] + w.offset.offset_ns for w, s in snaps if s.get("t_measure_start_ns")]
                if starts:
                    deadline = min(starts) + int(plan.duration_s * 1e9)
            if deadline is not None and not self._stopping and _now_ns() >= deadline:
                self._stop_all(phase, None)
            if limit is not None and not self._stopping and measured >= 10 and errs / measured > limit:
                self._stop_all(
                    phase,
                    f"error rate {errs / measured:.1%} exceeded --max-error-rate {limit:.1%} after {measured} requests",
                )
            if all(w.handle.result() is not None for w in phase):
                break
            for w in phase:
                w.handle.sync_files(w.directory)
            time.sleep(_POLL_S)
        for w in phase:
            w.handle.sync_files(w.directory)
            w.result = w.handle.result()
            snap = w.handle.snapshot() or {}
            self._done_before += snap.get("finished", 0)

    def _end_phase(self, phase: list[_Worker]) -> None:
        for w in phase:
            if w.result is not None and w.result.error is None:
                try:
                    w.offset_end = measure_offset(w.handle.clock_reading, tries=4)
                except (TimeoutError, OSError, PytpsError):
                    w.offset_end = None
            w.handle.close()

    def _run_phase(self, shares: list[Share], names: list[str], out_dir: Path, t_start: int, measured: bool) -> None:
        # Before the workers start: each sends its first request (its probe of key, path and model) at once.
        self._start_scraper(out_dir)
        phase = self._start_phase(shares, names, out_dir)
        self.workers.extend(phase)
        self._started = False
        try:
            try:
                self._wait_ready(phase)
                self._go(phase)
                self._watch(phase, t_start, measured)
            except KeyboardInterrupt:
                # Ctrl-C ends the run as a whole: every worker cancels what is in flight, keeps
                # what finished and reports; a second Ctrl-C gives up waiting.
                self.interrupted = True
                for w in phase:
                    w.handle.interrupt()
                end = time.monotonic() + _END_WAIT_S
                while time.monotonic() < end and not all(w.handle.result() is not None for w in phase):
                    time.sleep(_POLL_S)
                for w in phase:
                    w.handle.sync_files(w.directory)
                    w.result = w.handle.result()
                if measured:
                    self._end_phase(phase)
                raise
            self._end_phase(phase)
        except BaseException:
            for w in phase:
                w.handle.close()
            raise

    # ---- the run ----------------------------------------------------------------------------

    def _resolve_model(self) -> str:
        from pytps.runner.event_loop import run_coroutine

        cfg = self.cfg
        if cfg.model:
            return cfg.model
        secrets = cfg.secrets
        endpoint = Endpoint(
            cfg.base_url,
            headers=cfg.request_headers,
            secrets=secrets,
            ca_file=cfg.ca_bundle,
            verify=not cfg.insecure,
            timeout_s=cfg.connect_timeout_s + cfg.read_timeout_s,
        )
        return run_coroutine(endpoint.first_model(cfg.api))

    def run(self) -> RunResult:
        cfg = self.cfg
        plan = cfg.plan
        model = self._resolve_model()
        self.settings["model"] = model
        out_dir = cfg.out_dir or default_out_dir(model)
        out_dir.mkdir(parents=True, exist_ok=True)
        total = (plan.requests + plan.warmup) if plan.requests is not None else None
        self._done_before = 0
        self.progress.start(total, plan.duration_s)
        t_start = _now_ns()
        first = 0
        interrupted = False
        try:
            n = self.options.workers
            if n == "auto":
                n, first = self._pilot(out_dir, t_start)
            assert isinstance(n, int)
            shares = divide(plan, n, first=first)
            self._run_phase(shares, [str(k) for k in range(n)], out_dir, t_start, measured=True)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            self.progress.stop()
            wall_s = (_now_ns() - t_start) / 1e9
            self._stop_scraper()
            if self._backend is not None:
                self._backend.shutdown()
        return self._merge(out_dir, wall_s, interrupted)

    def _pilot(self, out_dir: Path, t_start: int) -> tuple[int, int]:
        """--workers auto: one worker runs the warm-up, and its client CPU share (CPU seconds of
        its event loop and engine threads per second of wall time) sets the count."""
        plan = self.cfg.plan
        if plan.warmup < 1:
            raise ConfigError(
                "--workers auto measures the client's CPU during warm-up: give --warmup N "
                "(a few seconds of requests, e.g. --warmup 64)"
            )
        self._run_phase(divide(plan, 1, end=plan.warmup), ["pilot"], out_dir, t_start, measured=False)
        pilot = self.workers[-1]
        cpu = (pilot.result.metadata.get("client_cpu") if pilot.result else None) or {}
        busy = cpu.get("loop_thread_s", 0.0) + (cpu.get("engine_thread_s") or 0.0)
        share = busy / cpu["wall_s"] if cpu.get("wall_s") else 0.0
        cores = os.cpu_count() or 1
        slots = plan.max_in_flight
        n = auto_workers(share, cores, slots)
        self._auto = {"pilot_cpu_share": share, "busy_share_limit": AUTO_BUSY_SHARE, "cores": cores, "workers": n}
        self._stopping = False
        return n, plan.warmup

    def _merge(self, out_dir: Path, wall_s: float, interrupted: bool) -> RunResult:
        parts: list[MergePart] = []
        per_worker = []
        cpu_loop = 0.0
        cpu_engine: float | None = None
        base: dict[str, Any] | None = None
        usage_notes = []
        include_usage = True
        for w in self.workers:
            result = w.result
            md = result.metadata if result is not None and result.error is None else _saved_metadata(w.directory)
            if md and base is None:
                base = dict(md)
            cpu = (md or {}).get("client_cpu") or {}
            cpu_loop += cpu.get("loop_thread_s") or 0.0
            if cpu.get("engine_thread_s") is not None:
                cpu_engine = (cpu_engine or 0.0) + cpu["engine_thread_s"]
            if (md or {}).get("usage_note"):
                usage_notes.append(md["usage_note"])  # type: ignore[index]
            include_usage &= bool((md or {}).get("include_usage", True))
            parts.append(
                MergePart(
                    len(parts), w.directory, w.offset.offset_ns, result.histograms if result is not None else None
                )
            )
            per_worker.append(
                {
                    "worker": w.name,
                    "requests": _journal_lines(w.directory),
                    "clock": w.offset.describe(),
                    "client_cpu": cpu or None,
                    "clock_at_end": w.offset_end.describe() if w.offset_end is not None else None,
                    "failed": result.error if result is not None else "no result",
                    "interrupted": bool(result and result.interrupted),
                }
            )
        if base is None:
            raise PytpsError(f"no worker of the run got as far as its first request; see {out_dir / 'workers'}")
        metadata = base
        metadata["client_cpu"] = {"wall_s": wall_s, "loop_thread_s": cpu_loop, "engine_thread_s": cpu_engine}
        metadata["clock"] = {
            "source": "CLOCK_MONOTONIC",
            "unit": "ns",
            "wall_minus_monotonic_ns": time.time_ns() - _now_ns(),
        }
        for entry in per_worker:
            if entry["failed"] is not None:
                entry["requests_kept"] = entry["requests"]
        for failure in self.failures:
            failure["requests_kept"] = next(e["requests"] for e in per_worker if e["worker"] == failure["worker"])
        stopped = self.stopped_reason or next(
            (w.result.stopped_reason for w in self.workers if w.result and w.result.stopped_reason), None
        )
        interrupted = interrupted or self.interrupted
        metadata["usage_note"] = usage_notes[0] if usage_notes else None
        metadata["include_usage"] = include_usage
        metadata["interrupted"] = interrupted
        metadata["stopped_reason"] = stopped
        metadata["scale"] = {
            "workers": sum(1 for w in self.workers if w.name != "pilot"),
            "workers_requested": self.options.workers,
            "auto": self._auto,
            "backend": self.options.backend,
            "ray_address": self.options.ray_address if self.options.backend == "ray" else None,
            "on_worker_failure": self.options.on_worker_failure,
            "per_worker": per_worker,
            "failures": self.failures,
            "max_clock_uncertainty_ns": max((w.offset.uncertainty_ns for w in self.workers), default=0),
        }
        if self.cfg.server_metrics is not None:
            metadata["server_metrics"] = self.cfg.server_metrics.describe(self._redactor)
        merged = merge_results(out_dir, parts, plan=self.cfg.plan, judge=self.cfg.judge, metadata=metadata)
        merged.interrupted = interrupted
        merged.stopped_reason = stopped
        if self.cfg.store_as is not None:
            from pytps.store.run_entry import record_in_store

            record_in_store(
                self.cfg.store, {"metadata": merged.metadata, "summary": merged.summary}, out_dir, self.cfg.store_as
            )
        return merged


def _saved_metadata(directory: Path) -> dict[str, Any] | None:
    """A worker's metadata as it wrote it when it started (it died before sending its result)."""
    try:
        md: dict[str, Any] = load_results(directory)["metadata"]
    except (OSError, ValueError, KeyError):
        return None
    return md


def _journal_lines(directory: Path) -> int:
    try:
        with open(directory / JOURNAL, "rb") as f:
            # A verdict line completes a request already counted (results/folder.read_journal).
            return sum(1 for line in f if line.endswith(b"\n") and not line.startswith(b'{"verdict_of"'))
    except OSError:
        return 0


def run_scaled(
    base_url: str, settings: dict[str, Any], options: ScaleOptions, progress: Progress | None = None
) -> RunResult:
    """A run of `settings` (make_config's) scaled by `options` (docs/scale.md)."""
    return ScaledRun(base_url, settings, options, progress).run()


__all__ = ["BACKENDS", "ON_WORKER_FAILURE", "ScaleOptions", "ScaledRun", "auto_workers", "parse_workers", "run_scaled"]
