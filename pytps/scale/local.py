"""The local backend of --workers N: one process per worker on this host, a fresh interpreter
(`python -m pytps.scale.local`: no thread or lock of the driver's is copied into it, and the
caller's main module is not imported again, as multiprocessing's spawn would).

The driver and a worker talk over a socket pair (multiprocessing's Connection framing). The
worker's main thread runs its WorkerCore; a second thread answers the driver (clock readings,
snapshots, go, stop, interrupt). The worker runs in a session of its own and ignores SIGINT:
Ctrl-C reaches the driver only, which interrupts every worker, so the run ends as one. A
worker whose driver is gone ends as after Ctrl-C. The worker writes its results folder in the
driver's folder directly (one file system).
"""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pytps.scale.clock import ClockReading
from pytps.scale.worker import WorkerCore, WorkerJob, WorkerResult

_CLOCK_TIMEOUT_S = 30.0


def worker_main(conn: Connection, worker: int, skew_ns: int) -> None:
    """A worker process: answers the driver until it is told to start, runs, reports, exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    core = WorkerCore(worker, skew_ns)
    send_lock = threading.Lock()
    jobs: queue.Queue[WorkerJob | None] = queue.Queue()

    def send(message: tuple[str, Any]) -> None:
        with send_lock:
            conn.send(message)

    def serve() -> None:
        while True:
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                jobs.put(None)
                core.interrupt()  # the driver is gone: end as after Ctrl-C
                return
            if kind == "clock":
                send(("clock", core.clock_reading()))
            elif kind == "snapshot":
                send(("snapshot", core.snapshot()))
            elif kind == "start":
                jobs.put(payload)
            elif kind == "go":
                core.go(payload)
            elif kind == "stop":
                core.stop(payload)
            elif kind == "interrupt":
                core.interrupt()
            elif kind == "close":
                jobs.put(None)

    threading.Thread(target=serve, name="pytps-worker-commands", daemon=True).start()
    job = jobs.get()
    if job is None:
        return
    result = core.run(job)
    send(("snapshot", core.snapshot()))
    send(("result", result))
    jobs.get()  # stays to answer the driver's last clock readings, until it says close


class LocalWorker:
    """The driver's handle of one worker process."""

    def __init__(self, worker: int, skew_ns: int = 0) -> None:
        self.worker = worker
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytps.scale.local", str(theirs.fileno()), str(worker), str(skew_ns)],
            pass_fds=[theirs.fileno()],
            start_new_session=True,
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._clock: queue.Queue[ClockReading] = queue.Queue()
        self._snapshot: dict[str, Any] | None = None
        self._result: WorkerResult | None = None
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"pytps-worker-{worker}-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                kind, payload = self._conn.recv()
            except (EOFError, OSError):
                break
            if kind == "clock":
                self._clock.put(payload)
            elif kind == "snapshot":
                self._snapshot = payload
            elif kind == "result":
                self._result = payload
        if self._result is None:
            try:
                code: int | None = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
            self._result = WorkerResult(self.worker, error=f"worker process {self.process.pid} {how}")

    def _send(self, kind: str, payload: Any = None) -> None:
        try:
            with self._send_lock:
                self._conn.send((kind, payload))
        except (BrokenPipeError, OSError):
            pass  # the worker is gone: the reader reports it

    def clock_reading(self) -> ClockReading:
        self._send("clock")
        try:
            return self._clock.get(timeout=_CLOCK_TIMEOUT_S)
        except queue.Empty:
            raise TimeoutError(f"worker {self.worker} did not answer a clock reading") from None

    def start(self, job: WorkerJob) -> None:
        self._send("start", job)

    def snapshot(self) -> dict[str, Any] | None:
        if self._result is None:
            self._send("snapshot")
        return self._snapshot

    def go(self, t0_ns: int) -> None:
        self._send("go", t0_ns)

    def stop(self, reason: str | None) -> None:
        self._send("stop", reason)

    def interrupt(self) -> None:
        self._send("interrupt")

    def result(self) -> WorkerResult | None:
        return self._result

    def sync_files(self, directory: Path) -> None:
        """Nothing to copy: the worker writes into the driver's folder."""

    def kill(self) -> None:
        """Tests: the worker dies as from SIGKILL."""
        self.process.kill()

    def close(self) -> None:
        self._send("close")
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self._conn.close()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker_main(Connection(int(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]))
