"""A launched server: its own process group, its output kept (redacted) in a log file, waited on
until ready, and stopped with SIGTERM, then SIGKILL after a grace period. Every live server is
also stopped at interpreter exit, so an exception cannot leave one behind."""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pytps.errors import ServerStartError
from pytps.serve_process.ready import Readiness, model_name, port_listening, probe_http, request_ready

TAIL_LINES = 20
POLL_S = 0.002  # the readiness poll: what the start-up figures' listening stamp is good to
SLOW_POLL_S = 0.02  # after POLL_FAST_S, a slower server is polled less often
POLL_FAST_S = 2.0

_LIVE: set[ServerProcess] = set()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_members(pgid: int) -> list[tuple[int, str, str]]:
    """(pid, state, name) of every process in group pgid, zombies included, from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:  # state ppid pgrp ...
            out.append((int(entry.name), fields[0], name))
    return out


@dataclass
class Stamps:
    """CLOCK_MONOTONIC ns of one start; 0 for a step not reached."""

    start_ns: int = 0
    listening_ns: int = 0
    ready_ns: int = 0
    ready_by: str = ""
    first_token_ns: int = 0
    first_token_note: str = ""

    def figures(self) -> dict[str, Any]:
        """Seconds from the process start to each step (None where not reached)."""

        def since(ns: int) -> float | None:
            return (ns - self.start_ns) / 1e9 if ns else None

        return {
            "listening_s": since(self.listening_ns),
            "ready_s": since(self.ready_ns),
            "first_token_s": since(self.first_token_ns),
            "ready_by": self.ready_by,
            "first_token_note": self.first_token_note or None,
            "start_ns": self.start_ns,
            "ready_ns": self.ready_ns or None,
        }


@dataclass(eq=False)
class ServerProcess:
    """One start of the served command. `redact` masks secrets in every line kept."""

    argv: list[str]
    port: int
    log_path: Path
    readiness: Readiness
    redact: Callable[[str], str]
    ready_timeout_s: float = 300.0
    grace_s: float = 10.0
    stamps: Stamps = field(default_factory=Stamps)
    exit_status: int | None = None
    stopped_by: str = ""
    _proc: subprocess.Popen[bytes] | None = None
    _pump: threading.Thread | None = None
    _tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))
    _log_match_ns: int = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> list[str]:
        return list(self._tail)

    def start(self) -> None:
        """Starts the command in a new session (its own process group); its output goes to the log."""
        log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 (the pump closes it)
        self.stamps.start_ns = time.monotonic_ns()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            log.close()
            raise ServerStartError(f"the server command cannot start: {self.redact(str(exc))}") from exc
        _LIVE.add(self)
        assert self._proc.stdout is not None
        self._pump = threading.Thread(target=self._copy_output, args=(self._proc.stdout, log), daemon=True)
        self._pump.start()

    def _copy_output(self, pipe: IO[bytes], log: IO[str]) -> None:
        pattern = self.readiness.pattern
        with log:
            for raw in iter(pipe.readline, b""):
                at = time.monotonic_ns()
                line = self.redact(raw.decode("utf-8", "replace").rstrip("\n"))
                log.write(line + "\n")
                log.flush()
                self._tail.append(line)
                if pattern is not None and not self._log_match_ns and pattern.search(line):
                    self._log_match_ns = at
            pipe.close()

    def wait_ready(self, model: str | None = None) -> None:
        """Polls until ready; a server that exits first, or is not ready in time, is a
        ServerStartError with the last lines of its log."""
        assert self._proc is not None
        st = self.stamps
        deadline = st.start_ns + int(self.ready_timeout_s * 1e9)
        kind = self.readiness.kind
        while True:
            status = self._proc.poll()
            if status is not None:
                self._join_pump()
                raise ServerStartError(
                    f"the server exited with status {status} before it was ready{self._last_line()}", self.tail()
                )
            now = time.monotonic_ns()
            if not st.listening_ns and port_listening(self.port):
                st.listening_ns = now
            if kind == "log":
                if self._log_match_ns:
                    st.ready_ns, st.ready_by = self._log_match_ns, f"log /{self.readiness.target}/"
            elif st.listening_ns:
                if kind == "request":
                    at = request_ready(self.port, model)
                    if at:
                        st.ready_ns, st.ready_by = at, "request"
                else:
                    at, path = probe_http(self.port, self.readiness)
                    if at:
                        st.ready_ns, st.ready_by = at, f"GET {path}"
            if st.ready_ns:
                return
            if now > deadline:
                what = "listening" if st.listening_ns else f"not listening on port {self.port}"
                raise ServerStartError(
                    f"the server was not ready after {self.ready_timeout_s:g} s ({what}; ready when: "
                    f"{self.readiness.describe()}){self._last_line()}",
                    self.tail(),
                )
            time.sleep(POLL_S if now - st.start_ns < POLL_FAST_S * 1e9 else SLOW_POLL_S)

    def time_first_token(self, model: str | None) -> None:
        """Stamps the first token of one streamed request (the start-up figures' last step)."""
        from pytps.serve_process.ready import first_token

        _, at, note = first_token(self.port, model or model_name(self.port))
        self.stamps.first_token_ns, self.stamps.first_token_note = at, note

    def _last_line(self) -> str:
        lines = [x for x in self._tail if x.strip()]
        return f"; its log ends: {lines[-1].strip()[:300]}" if lines else "; it wrote nothing"

    def _join_pump(self) -> None:
        if self._pump is not None:
            self._pump.join(timeout=5)

    def stop(self) -> str:
        """SIGTERM to the whole group, SIGKILL after the grace period: how it ended ('' if it was
        not running). Returns once no process of the group is left (zombies of others aside)."""
        proc = self._proc
        if proc is None:
            return ""
        pgid = proc.pid  # the session leader's pid is its group's id
        how = "exited by itself" if proc.poll() is not None else "SIGTERM"
        if how == "SIGTERM" or _alive(pgid):
            _signal_group(pgid, signal.SIGTERM)
            end = time.monotonic() + self.grace_s
            while time.monotonic() < end and (proc.poll() is None or _alive(pgid)):
                time.sleep(0.01)
            if proc.poll() is None or _alive(pgid):
                how = f"SIGKILL after {self.grace_s:g} s (SIGTERM ignored)"
                _signal_group(pgid, signal.SIGKILL)
                end = time.monotonic() + 10
                while time.monotonic() < end and (proc.poll() is None or _alive(pgid)):
                    time.sleep(0.01)
        self.exit_status = proc.wait()
        self._join_pump()
        self.stopped_by = how
        _LIVE.discard(self)
        self._proc = None
        return how

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _alive(pgid: int) -> bool:
    return any(state != "Z" for _, state, _ in group_members(pgid))


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@atexit.register
def stop_all() -> None:
    """Every server still running is stopped (an exception that ended pytps left it)."""
    for server in list(_LIVE):
        server.stop()
