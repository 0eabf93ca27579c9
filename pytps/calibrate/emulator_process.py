"""The emulator in a process of its own (`pytps serve --truth-log FILE`), so it never shares the
GIL or a thread with the client it measures; its ground truth is read back from that file.

Why a file: the truth is written by the server's side thread as JSON lines (one per finished
request, `docs/emulator.md`), which needs no route of its own and no second socket that the
measured client could contend with. It is read incrementally (an offset per reader) while the
server runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytps.errors import PytpsError


class CalibrationError(PytpsError):
    """The calibration could not run (the emulator did not start, its truth did not arrive)."""


def _die_with_parent() -> None:
    """In the child before exec: a SIGTERM when the calibrating process dies, however it dies
    (Linux; elsewhere the context manager's close() is the only cleanup)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmulatorProcess:
    """`pytps serve` on 127.0.0.1 at one (gap, tokens per event) setting; truth from its log."""

    def __init__(self, *, itl_us: float, tokens_per_event: int, ttft_ms: float = 20.0, max_output_tokens: int) -> None:
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="pytps-calibrate-"))
        self.truth_path = self.dir / "truth.jsonl"
        self.truth_path.touch()
        self._offset = 0
        self._pending: dict[str, dict[str, Any]] = {}
        cmd = [
            sys.executable, "-m", "pytps", "serve", "--port", str(self.port), "--ttft-ms", str(ttft_ms),
            "--itl-us", repr(itl_us), "--tokens-per-event", str(tokens_per_event),
            "--max-output-tokens", str(max_output_tokens), "--truth-log", str(self.truth_path),
        ]  # fmt: skip
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode(errors="replace")[-500:] if self.proc.stderr else ""
                    self.close()
                    raise CalibrationError(f"the emulator (pytps serve) did not start: {err.strip()}") from None
                time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _read_new(self) -> None:
        with open(self.truth_path, encoding="utf-8") as f:
            f.seek(self._offset)
            while True:
                line = f.readline()
                if not line.endswith("\n"):
                    break  # a line still being written: read it next time
                self._offset += len(line.encode("utf-8"))
                rec = json.loads(line)
                self._pending[rec["id"]] = rec

    def take_truth(self, n: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The next `n` truth records (waiting for the side thread to write them), handed over."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._read_new()
            if len(self._pending) >= n or time.monotonic() > deadline:
                out = list(self._pending.values())
                self._pending.clear()
                return out
            time.sleep(0.02)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        with contextlib.suppress(Exception):
            if self.proc.stderr:
                self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> EmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
