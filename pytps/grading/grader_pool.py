"""Graders that may not return, run where they can be stopped: worker processes
(grading/grader_worker), one answer at a time each, killed at the answer's deadline
(--grader-timeout-s) and started again when next needed.

The event loop never blocks on a worker: a worker's reply is read as the loop sees its pipe
become readable, and a cancelled grading (the run stopped: Ctrl-C, SIGTERM) kills the worker it
was waiting for. A worker dies with the process that started it (PR_SET_PDEATHSIG on Linux; an
idle one also ends at its stdin's end of file)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import subprocess
import sys
from typing import Any

from pytps.grading.grader_frames import frame, read_frame, whole

#: A worker gets this long to start (import pytps's grading) before its first answer's deadline
#: begins: the deadline is the grader's, not the interpreter's start-up on a loaded machine.
START_TIMEOUT_S = 60.0


class GraderTimeout(Exception):
    """The grader gave no verdict before its deadline; its worker was killed."""


def pool_size() -> int:
    """Workers at most: answers graded at once (each worker grades one at a time)."""
    return max(4, min(16, 2 * (os.cpu_count() or 1)))


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        # The parent's import path, so a user's module:function imports as it did here.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytps.grading.grader_worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.ready = False

    async def _reply(self, timeout_s: float) -> Any:
        """The next frame from the worker, read without blocking the loop; TimeoutError after timeout_s."""
        loop = asyncio.get_running_loop()
        fd = self.stdout.fileno()
        os.set_blocking(fd, False)
        buf = bytearray()
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                part = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not part:
                if not done.done():
                    done.set_exception(EOFError("the grader worker ended"))
                return
            buf.extend(part)
            if whole(buf) and not done.done():
                done.set_result(None)

        loop.add_reader(fd, readable)
        try:
            await asyncio.wait_for(done, timeout_s)
        finally:
            loop.remove_reader(fd)
        return read_frame(io.BytesIO(bytes(buf)))

    async def ask(self, job: tuple[Any, ...], timeout_s: float) -> Any:
        if not self.ready:
            await self._reply(START_TIMEOUT_S)
            self.ready = True
        self.stdin.write(frame(job))
        self.stdin.flush()
        try:
            return await self._reply(timeout_s)
        except (asyncio.TimeoutError, TimeoutError):
            raise GraderTimeout from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                f.close()


class GraderPool:
    """At most pool_size() workers, started when first needed; one job each at a time."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._idle: list[_Worker] = []
        self._limit: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._limit is None or self._loop is not loop:
            self._limit, self._loop = asyncio.Semaphore(pool_size()), loop
        return self._limit

    async def run(self, job: tuple[Any, ...]) -> Any:
        """The worker's answer to job; GraderTimeout past the deadline; RuntimeError(text) when the
        grader raised (text: its type and message)."""
        async with self._semaphore():
            worker = self._idle.pop() if self._idle else _Worker()
            kept = False
            try:
                status, value = await worker.ask(job, self.timeout_s)
                kept = True
            except EOFError as exc:
                raise RuntimeError(f"the grader's process ended without a verdict ({exc})") from None
            finally:
                if kept:
                    self._idle.append(worker)
                else:  # timed out, cancelled (the run stopped) or dead: never reused
                    worker.kill()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        """Ends the idle workers (none is busy once the run's gradings are over)."""
        idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()
