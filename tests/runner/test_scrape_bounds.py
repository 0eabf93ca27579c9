"""Issue 40, defects 7 and 8: a /metrics server cannot make a scrape unbounded in time, bytes or
series. Each server here is a raw socket on 127.0.0.1; the scraper is driven directly."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fault_servers import FaultServer, Reader, Request

from pytps.runner.scraper import Scraper


class _RawServer:
    """A FaultServer whose serve(conn) answers each connection's first request, then closes it."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self.serve = serve
        self.server = FaultServer(self._one)
        self.url = self.server.url + "/metrics"

    def _one(self, srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        self.serve(conn)
        return False

    def close(self) -> None:
        self.server.__exit__()


def _scrape_once(url: str, out: Path, **kw: object) -> tuple[dict[str, object], list[str], float, bool]:
    """One scrape in a thread; (its line, the warnings, seconds, whether it ended within 20 s)."""
    out.mkdir()
    warnings: list[str] = []
    scraper = Scraper([url], out, interval_s=0.25, warn=warnings.append, **kw)  # type: ignore[arg-type]
    t = time.monotonic()
    thread = threading.Thread(target=scraper.scrape_all, daemon=True)
    thread.start()
    thread.join(20)
    elapsed = time.monotonic() - t
    ended = not thread.is_alive()
    line = json.loads((out / "server_metrics.jsonl").read_text().splitlines()[0]) if ended else {}
    return line, warnings, elapsed, ended


def test_a_trickling_metrics_server_is_cut_at_the_scrapes_deadline(tmp_path: Path) -> None:
    """1 byte every 0.3 s: each read is within a 1 s timeout, so a per-read timeout never fires
    (the issue: the run was held for 90 s)."""
    body = b"# TYPE m gauge\n" + b"m 1\n" * 1000
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body)

    def trickle(conn: socket.socket) -> None:
        for byte in head + body:
            if server.server.stop.is_set():
                return
            conn.sendall(bytes([byte]))
            time.sleep(0.3)

    server = _RawServer(trickle)
    try:
        line, warnings, elapsed, ended = _scrape_once(server.url, tmp_path / "a")
    finally:
        server.close()
    assert ended, "the scrape was still reading after 20 s"
    assert elapsed < 5  # the deadline is 1 s (4 intervals of 0.25 s, at least 1 s)
    assert "timed out" in str(line["error"]) and len(warnings) == 1


def test_a_body_past_the_byte_cap_is_dropped_with_one_warning(tmp_path: Path) -> None:
    padding = b"# padding to make the body large\n" * (4 << 15)  # ~4.3 MB
    body = b"# TYPE m gauge\nm 1\n" + padding
    sent = [0]

    def large(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 1 << 16):
            conn.sendall(body[i : i + (1 << 16)])
            sent[0] += 1 << 16

    server = _RawServer(large)
    try:
        line, warnings, _, ended = _scrape_once(server.url, tmp_path / "a", max_bytes=1 << 20)
    finally:
        server.close()
    assert ended
    assert "--server-metrics-max-bytes (1,048,576 bytes)" in str(line["error"]) and line["samples"] == []
    assert len(warnings) == 1 and "--server-metrics-max-bytes" in warnings[0]


def test_a_scrape_past_the_series_cap_is_dropped_and_the_warning_names_the_cap(tmp_path: Path) -> None:
    body = b"# TYPE m gauge\n" + b"".join(b'm{i="%d"} 1\n' % i for i in range(60_000))

    def many(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    server = _RawServer(many)
    try:
        line, warnings, _, ended = _scrape_once(server.url, tmp_path / "a")
    finally:
        server.close()
    assert ended
    assert line["samples"] == [] and "more than 50,000 series" in str(line["error"])
    assert len(warnings) == 1 and "50,000" in warnings[0]
    assert (tmp_path / "a" / "server_metrics.jsonl").stat().st_size < 10_000
