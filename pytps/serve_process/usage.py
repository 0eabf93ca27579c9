"""CPU and memory of the server's processes over a cell, from /proc (the same host only), beside
the client's own (getrusage): sampled by a thread every INTERVAL_S."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

from pytps.serve_process.process import group_members

INTERVAL_S = 0.5
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _group_cpu_rss(pgid: int) -> tuple[float, int]:
    """(CPU seconds, resident bytes) summed over the group's live processes."""
    cpu, rss = 0.0, 0
    for pid, state, _ in group_members(pgid):
        if state == "Z":
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            cpu += (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return cpu, rss


class UsageWatch:
    """Started at a cell's start and stopped at its end: the server group's CPU seconds, mean and
    peak resident memory; and the client process's CPU seconds and peak memory."""

    def __init__(self, pgid: int | None) -> None:
        self.pgid = pgid
        self._stop = threading.Event()
        self._rss: list[int] = []
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> UsageWatch:
        self._t0 = time.monotonic()
        self._client0 = resource.getrusage(resource.RUSAGE_SELF)
        self._cpu0 = _group_cpu_rss(self.pgid)[0] if self.pgid else 0.0
        self._cpu1 = self._cpu0
        self._thread.start()
        return self

    def _sample(self) -> None:
        while True:
            if self.pgid:
                cpu, rss = _group_cpu_rss(self.pgid)
                if rss:
                    self._rss.append(rss)
                    self._cpu1 = cpu
            if self._stop.wait(INTERVAL_S):
                return

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.elapsed_s = time.monotonic() - self._t0
        self._client1 = resource.getrusage(resource.RUSAGE_SELF)

    def result(self) -> dict[str, Any]:
        c0, c1 = self._client0, self._client1
        client_cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
        out: dict[str, Any] = {
            "elapsed_s": self.elapsed_s,
            "client": {"cpu_s": client_cpu, "peak_rss_bytes": c1.ru_maxrss * 1024},
            "server": None,
        }
        if self._rss:
            server_cpu = self._cpu1 - self._cpu0
            out["server"] = {
                "cpu_s": server_cpu,
                "cpu_share": server_cpu / self.elapsed_s if self.elapsed_s > 0 else None,
                "mean_rss_bytes": sum(self._rss) / len(self._rss),
                "peak_rss_bytes": max(self._rss),
                "samples": len(self._rss),
            }
        return out
