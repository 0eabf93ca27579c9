"""The server-metrics scraper (docs/server-metrics.md): its own thread and its own HTTP client
(the stdlib's http.client), off the measuring path. It scrapes every URL once just before the
run's first request, every interval while it goes, and once just after its last, so every
counter's delta covers the run. Each scrape is stamped on CLOCK_MONOTONIC (the native clock the
transports stamp with) before the request and after the body; parsed with prometheus-client
(measure/server_metrics/parse), it is one line of server_metrics.jsonl at once.

Failures never cost the run: a URL that refuses, times out, answers 404 or is not Prometheus
text is one warning line (the first time), and scraping goes on.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from pytps._native import _core
from pytps.measure.redact import Redactor
from pytps.measure.server_metrics.parse import ParseError, Scrape, parse_exposition
from pytps.results.files import SCRAPES, SCRAPES_RAW
from pytps.runner.scrape_settings import DEFAULT_MAX_SCRAPE_BYTES, MAX_SCRAPE_SERIES

_ACCEPT = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"


class ScrapeTooLarge(OSError):
    """The body passed --server-metrics-max-bytes."""


class _Target:
    """One URL's connection, kept alive between scrapes and made anew after a failure."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout_s: float, insecure: bool) -> None:
        self.url = url
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers = {"Accept": _ACCEPT, **headers}
        self.timeout_s = timeout_s
        self.context = ssl._create_unverified_context() if insecure else None
        self.conn: http.client.HTTPConnection | None = None
        self.warned = False
        self.warned_series = False

    def _connect(self) -> http.client.HTTPConnection:
        if self.conn is None:
            if self.https:
                self.conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout_s, context=self.context
                )
            else:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return self.conn

    @staticmethod
    def _cut(conn: http.client.HTTPConnection, cut: threading.Event) -> None:
        cut.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def fetch(self, max_bytes: int = DEFAULT_MAX_SCRAPE_BYTES) -> tuple[int, int, int, str, str]:
        """(t_before_ns, t_after_ns, status, content type, body): stamped around the request.
        A kept-alive connection the server closed meanwhile is made anew once (and stamped anew).
        Raises OSError / http.client.HTTPException."""
        reused = self.conn is not None
        try:
            return self._fetch_once(max_bytes)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            return self._fetch_once(max_bytes)

    def _fetch_once(self, max_bytes: int) -> tuple[int, int, int, str, str]:
        """One GET, bounded as a whole: the timeout is a deadline for the scrape (a server that
        trickles a byte at a time is cut there, not timed out read by read), and a body past
        max_bytes is an error (ScrapeTooLarge) read no further."""
        conn = self._connect()
        t_before = _core.now_ns()
        deadline = time.monotonic() + self.timeout_s
        # A watchdog shuts the socket at the deadline, whatever read http.client is in (the
        # head's lines included); each read also waits no longer than what is left.
        cut = threading.Event()
        watchdog = threading.Timer(self.timeout_s, self._cut, args=(conn, cut))
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request("GET", self.path, headers=self.headers)
            resp = conn.getresponse()
            parts: list[bytes] = []
            size = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out: the whole scrape took longer than {self.timeout_s:g} s")
                if conn.sock is not None:
                    conn.sock.settimeout(left)
                part = resp.read(1 << 16)
                if not part:
                    break
                size += len(part)
                if size > max_bytes:
                    raise ScrapeTooLarge(
                        f"the body passed --server-metrics-max-bytes ({max_bytes:,} bytes); this scrape is dropped"
                    )
                parts.append(part)
            body = b"".join(parts)
        except Exception as exc:
            self.close()
            if cut.is_set() and not isinstance(exc, ScrapeTooLarge):
                raise TimeoutError(f"timed out: the whole scrape took longer than {self.timeout_s:g} s") from None
            raise
        finally:
            watchdog.cancel()
        t_after = _core.now_ns()
        if resp.will_close:
            self.close()
        ctype = resp.getheader("Content-Type") or ""
        return t_before, t_after, resp.status, ctype, body.decode("utf-8", errors="replace")


class Scraper:
    """Scrapes urls into out_dir/server_metrics.jsonl (and the raw bodies with raw=True).
    start() takes the first scrapes and starts the thread; stop() ends it and takes the last."""

    def __init__(
        self,
        urls: Sequence[str],
        out_dir: Path,
        *,
        interval_s: float = 0.5,
        headers: Mapping[str, str] | None = None,
        raw: bool = False,
        insecure: bool = False,
        redactor: Redactor | None = None,
        warn: Callable[[str], None] | None = None,
        max_bytes: int = DEFAULT_MAX_SCRAPE_BYTES,
        max_series: int = MAX_SCRAPE_SERIES,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_series = max_series
        self.interval_ns = int(interval_s * 1e9)
        timeout_s = min(max(interval_s * 4, 1.0), 5.0)
        self.targets = [_Target(u, headers or {}, timeout_s, insecure) for u in urls]
        self.redactor = redactor or Redactor(())
        self.warn = warn or (lambda line: print(line, file=sys.stderr))
        self.path = out_dir / SCRAPES
        self._out: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (open for the run)
        self._raw: IO[str] | None = open(out_dir / SCRAPES_RAW, "a", encoding="utf-8") if raw else None  # noqa: SIM115
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.scrapes = 0
        self.failures = 0

    def _scrape(self, target: _Target) -> None:
        url = self.redactor(target.url)
        try:
            t0, t1, status, ctype, body = target.fetch(self.max_bytes)
        except (OSError, http.client.HTTPException) as exc:
            t = _core.now_ns()
            self._record(Scrape(url, t, t, error=f"{type(exc).__name__}: {exc}"), target, None)
            return
        scrape = Scrape(url, t0, t1)
        if status != 200:
            scrape.error = f"HTTP {status}"
        else:
            # Sample lines counted at C speed before parsing: the parser builds a whole family
            # before it yields it, so one family of a million series would be parsed to the end.
            sample_lines = body.count("\n") + 1 - body.count("\n#") - body.startswith("#") - body.endswith("\n")
            too_many = sample_lines > self.max_series
            if not too_many:
                try:
                    scrape.types, scrape.samples = parse_exposition(body, ctype, self.max_series + 1)
                except ParseError as exc:
                    scrape.error = str(exc)
                too_many = len(scrape.samples) > self.max_series
            if too_many:
                # Dropped whole, not cut: a partial scrape would make counters look reset, and a
                # million series at every interval would fill the disk.
                scrape.types, scrape.samples = {}, []
                scrape.error = (
                    f"more than {self.max_series:,} series in one scrape (pytps's cap of series per scrape); "
                    "this scrape is dropped"
                )
            if self.redactor:
                # A server can echo a request's credential in a label value (a proxy's `user` or
                # `key` label): label values are server text like any other, redacted before written.
                red = self.redactor
                scrape.samples = [(n, {k: red(v) for k, v in labels.items()}, v) for n, labels, v in scrape.samples]
                body = red(body)
        self._record(scrape, target, body)

    def _record(self, scrape: Scrape, target: _Target, body: str | None) -> None:
        self.scrapes += 1
        if scrape.error is not None:
            scrape.error = self.redactor(scrape.error)
            self.failures += 1
            if not target.warned:
                target.warned = True
                self.warn(
                    f"pytps: warning: server metrics {scrape.url}: {scrape.error}; the run goes on "
                    "(later failures of this URL are counted in the summary, not shown)"
                )
        self._out.write(json.dumps(scrape.as_json(), separators=(",", ":")) + "\n")
        self._out.flush()
        if self._raw is not None and body is not None:
            line = {"url": scrape.url, "t_ns": scrape.t_ns, "text": body}
            self._raw.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._raw.flush()

    def scrape_all(self) -> None:
        for target in self.targets:
            self._scrape(target)

    def _loop(self) -> None:
        due = _core.now_ns() + self.interval_ns
        while not self._stop.wait(max(due - _core.now_ns(), 0) / 1e9):
            self.scrape_all()
            due += self.interval_ns
            now = _core.now_ns()
            if due < now:  # a slow scrape: the next one is an interval from now, not a burst
                due = now + self.interval_ns

    def start(self) -> None:
        """The first scrapes (just before the first request), then the thread."""
        self.scrape_all()
        self._thread = threading.Thread(target=self._loop, name="pytps-server-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ends the thread, takes the last scrapes (just after the last request), closes the files."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self.scrape_all()
        for target in self.targets:
            target.close()
        self._out.close()
        if self._raw is not None:
            self._raw.close()
