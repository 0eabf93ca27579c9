"""--backend ray: the workers as Ray actors, each running the same WorkerCore as a local worker
process (pytps.scale.worker), placed on the cluster at --ray-address or on a local one.

A local cluster that pytps starts binds to 127.0.0.1 (checked after it started), starts no
dashboard and sends no usage statistics (RAY_USAGE_STATS_ENABLED=0). An actor writes its
results folder on its own node and the driver copies the new bytes of its journal and event
log every poll, so a worker that dies keeps what the driver had copied (with a whole node lost,
up to one poll, 50 ms, of finished requests may go with it; on one host nothing is lost).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.results.files import EVENT_LOG, JOURNAL, RESULTS
from pytps.scale.clock import ClockReading
from pytps.scale.worker import WorkerCore, WorkerJob, WorkerResult

#: The files an actor's folder holds that the driver copies: appended ones grow, results.json is whole.
_APPENDED = (JOURNAL, EVENT_LOG)
_WHOLE = (RESULTS,)
_CALL_TIMEOUT_S = 30.0
#: Set to 0, Ray runs as a single node on 127.0.0.1 (ray._private.ray_constants.ENABLE_RAY_CLUSTER).
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install ray") from None
    return ray


class WorkerActor:
    """The actor's class (made a Ray actor by RayBackend): a WorkerCore and its folder."""

    def __init__(self, worker: int, skew_ns: int) -> None:
        self.core = WorkerCore(worker, skew_ns)
        self.directory: Path | None = None

    def clock_reading(self) -> ClockReading:
        return self.core.clock_reading()

    def run(self, job: WorkerJob) -> WorkerResult:
        self.directory = Path(tempfile.mkdtemp(prefix=f"pytps-worker-{self.core.worker}-"))
        job.settings = {**job.settings, "out": str(self.directory)}
        return self.core.run(job)

    def snapshot(self) -> dict[str, Any]:
        return self.core.snapshot()

    def go(self, t0_ns: int) -> None:
        self.core.go(t0_ns)

    def stop(self, reason: str | None) -> None:
        self.core.stop(reason)

    def interrupt(self) -> None:
        self.core.interrupt()

    def read_files(self, offsets: dict[str, int]) -> dict[str, bytes]:
        """New bytes of the appended files from the given offsets, and the whole files."""
        out: dict[str, bytes] = {}
        if self.directory is None:
            return out
        for name in _APPENDED + _WHOLE:
            path = self.directory / name
            if not path.exists():
                continue
            with open(path, "rb") as f:
                f.seek(offsets.get(name, 0) if name in _APPENDED else 0)
                out[name] = f.read()
        return out

    def cleanup(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


class RayWorker:
    """The driver's handle of one actor."""

    def __init__(self, ray: Any, actor: Any, worker: int) -> None:
        self._ray = ray
        self.actor = actor
        self.worker = worker
        self._ref: Any = None
        self._result: WorkerResult | None = None
        self._snapshot: dict[str, Any] | None = None
        self._offsets: dict[str, int] = {}
        self._closed = False

    def clock_reading(self) -> ClockReading:
        reading: ClockReading = self._ray.get(self.actor.clock_reading.remote(), timeout=_CALL_TIMEOUT_S)
        return reading

    def start(self, job: WorkerJob) -> None:
        self._ref = self.actor.run.remote(job)

    def snapshot(self) -> dict[str, Any] | None:
        if self._result is None or self._result.error is None:
            with contextlib.suppress(Exception):  # a dead actor: result() says so
                self._snapshot = self._ray.get(self.actor.snapshot.remote(), timeout=_CALL_TIMEOUT_S)
        return self._snapshot

    def go(self, t0_ns: int) -> None:
        self.actor.go.remote(t0_ns)

    def stop(self, reason: str | None) -> None:
        self.actor.stop.remote(reason)

    def interrupt(self) -> None:
        self.actor.interrupt.remote()

    def result(self) -> WorkerResult | None:
        if self._result is None and self._ref is not None:
            ready, _ = self._ray.wait([self._ref], timeout=0)
            if ready:
                try:
                    self._result = self._ray.get(self._ref)
                except Exception as exc:  # the actor died: a failure to report
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    self._result = WorkerResult(self.worker, error=f"Ray actor failed: {first}")
        return self._result

    def sync_files(self, directory: Path) -> None:
        try:
            files = self._ray.get(self.actor.read_files.remote(self._offsets), timeout=_CALL_TIMEOUT_S)
        except Exception:  # a dead actor: what was copied stays
            return
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            if name in _APPENDED:
                with open(directory / name, "ab") as f:
                    f.write(data)
                self._offsets[name] = self._offsets.get(name, 0) + len(data)
            else:
                (directory / name).write_bytes(data)

    def kill(self) -> None:
        """Tests: the actor dies as its process would."""
        self._ray.kill(self.actor, no_restart=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # already dead
            self._ray.get(self.actor.cleanup.remote(), timeout=_CALL_TIMEOUT_S)
        self._ray.kill(self.actor, no_restart=True)


class RayBackend:
    """Connects to the cluster at `address` (or starts a local one) and places workers on it."""

    def __init__(self, address: str | None) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not address:
            # Ray's "no cluster" mode (its default on macOS and Windows): the node's address is
            # 127.0.0.1 and every Ray server of the node listens there only. Read when Ray is
            # imported, and inherited by the processes it starts.
            os.environ.setdefault(LOCAL_ONLY_ENV, "0")
        ray = _import_ray()
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            self._owned = True  # connected (or started) here: shut down here
            if address:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
                node_ip = ray.util.get_node_ip_address()
                if node_ip != "127.0.0.1":
                    ray.shutdown()
                    raise ConfigError(
                        f"the local Ray cluster would listen on {node_ip}, not only on 127.0.0.1 (Ray was "
                        f"imported before pytps set {LOCAL_ONLY_ENV}=0); start pytps in a fresh process, or "
                        "give --ray-address of a cluster of your own"
                    )
        self._actor_class = ray.remote(num_cpus=1, max_concurrency=8)(WorkerActor)

    def spawn(self, n: int, skews: list[int]) -> list[RayWorker]:
        actors = [
            self._actor_class.options(scheduling_strategy="SPREAD").remote(i, skew) for i, skew in enumerate(skews)
        ]
        return [RayWorker(self._ray, actor, i) for i, actor in enumerate(actors)]

    def shutdown(self) -> None:
        if self._owned:
            self._ray.shutdown()
