"""The scraper in a process of its own (docs/server-metrics.md, "Off the measuring path"): the
scraper thread (pytps.runner.scraper) runs in a child Python, so parsing a scrape never holds
the GIL the run's event loop needs (a thread in this process parses while the asyncio transport
waits to stamp a read: measured, `bench/bench_server_metrics.py`). CLOCK_MONOTONIC is the
machine's, so the child's stamps are on the run's clock.

The settings, secrets included, go to the child on its stdin, never on its command line or in its
environment. The child takes its first scrapes, says "ready", scrapes until "stop" (or its stdin
closes: the parent went away), takes the last scrapes and says "done". Its warnings go to the
parent's stderr. It ignores SIGINT: a Ctrl-C is the parent's to handle, and the parent then stops it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pytps.measure.redact import Redactor
from pytps.runner.scrape_settings import DEFAULT_MAX_SCRAPE_BYTES, ServerMetrics
from pytps.runner.scraper import Scraper

#: How long the child may take to start and take its first scrapes, and to take its last ones.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class ScraperProcess:
    """Scraper's start()/stop(), the scraping done by a child process."""

    def __init__(
        self,
        urls: Sequence[str],
        out_dir: Path,
        *,
        interval_s: float,
        headers: Mapping[str, str],
        raw: bool,
        insecure: bool,
        secrets: Sequence[str],
        max_bytes: int = DEFAULT_MAX_SCRAPE_BYTES,
    ) -> None:
        self.settings: dict[str, Any] = {
            "max_bytes": max_bytes,
            "urls": list(urls),
            "out_dir": os.fspath(out_dir),
            "interval_s": interval_s,
            "headers": dict(headers),
            "raw": raw,
            "insecure": insecure,
            "secrets": list(secrets),
        }
        self.proc: subprocess.Popen[str] | None = None

    @classmethod
    def for_run(cls, sm: ServerMetrics, out_dir: Path, *, insecure: bool, redactor: Redactor) -> ScraperProcess:
        """The scraper of a run's --server-metrics settings."""
        return cls(
            sm.urls,
            out_dir,
            interval_s=sm.interval_s,
            headers=sm.headers,
            raw=sm.raw,
            insecure=insecure,
            secrets=redactor.secrets,
            max_bytes=sm.max_bytes,
        )

    def _line(self, stream: IO[str], timeout_s: float) -> str:
        ready, _, _ = select.select([stream], [], [], timeout_s)
        return stream.readline().strip() if ready else ""

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytps.runner.scrape_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(self.settings) + "\n")
        self.proc.stdin.flush()
        if self._line(self.proc.stdout, START_TIMEOUT_S) != "ready":
            self._end()
            print("pytps: warning: the server-metrics scraper did not start; the run goes on", file=sys.stderr)

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
            self._line(self.proc.stdout, STOP_TIMEOUT_S)
        except (OSError, ValueError):
            pass  # it is gone already
        self._end()

    def _end(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def main() -> None:
    """The child: scrape as the settings on stdin say until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    s = json.loads(sys.stdin.readline())
    scraper = Scraper(
        s["urls"],
        Path(s["out_dir"]),
        interval_s=s["interval_s"],
        headers=s["headers"],
        raw=s["raw"],
        insecure=s["insecure"],
        redactor=Redactor(s["secrets"]),
        max_bytes=s.get("max_bytes", DEFAULT_MAX_SCRAPE_BYTES),
    )
    scraper.start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    scraper.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main()
