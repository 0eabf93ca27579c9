"""The offset of a worker's clock to the driver's (docs/scale.md, "Clocks").

CLOCK_MONOTONIC readings of two machines are not comparable, so every absolute time a worker
records is moved onto the driver's clock by an offset measured the way Cristian's algorithm
does: the driver reads its clock (t1), asks the worker for its reading (w: CLOCK_MONOTONIC and
CLOCK_REALTIME, read together), and reads its clock when the answer is back (t2). The worker's
reading was taken somewhere between t1 and t2, so

    offset = (t1 + t2) / 2 - w,  uncertainty = (t2 - t1) / 2

and the try with the tightest round trip of several is kept (the others waited in a queue
somewhere, which only widens the interval). The realtime offset, measured by the same exchange,
is how far the two machines' wall clocks disagree: recorded, not used (a wall clock may step).
A worker on the driver's own host (same boot id) reads the very same CLOCK_MONOTONIC: its offset
is 0 exactly, unless a test injected a skew to pretend otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytps._native import _core

#: Exchanges per measurement; the tightest round trip is kept.
TRIES = 16


@dataclass(frozen=True)
class ClockReading:
    """One worker's clocks, read together: (monotonic_ns, realtime_ns), and its boot id."""

    monotonic_ns: int
    realtime_ns: int
    boot_id: str | None


@dataclass(frozen=True)
class ClockOffset:
    """driver_monotonic = worker_monotonic + offset_ns, within ± uncertainty_ns."""

    offset_ns: int
    uncertainty_ns: int
    round_trip_ns: int
    realtime_offset_ns: int
    method: str  # "same clock" or "round trip"
    tries: int

    def describe(self) -> dict[str, Any]:
        return asdict(self)


def boot_id() -> str | None:
    """This host's boot id: two processes with the same one share CLOCK_MONOTONIC."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def read_clocks(skew_ns: int = 0) -> ClockReading:
    """This process's reading; skew_ns (tests only) pretends the monotonic clock is off by that
    much, as another machine's would be, and hides the boot id so nothing knows better."""
    mono = _core.now_ns()
    real = time.time_ns()
    return ClockReading(mono + skew_ns, real, None if skew_ns else boot_id())


def measure_offset(ask: Callable[[], ClockReading], tries: int = TRIES) -> ClockOffset:
    """The worker's offset from `tries` exchanges with `ask` (a round trip to the worker)."""
    best: tuple[int, int, int, int, int] | None = None  # (rtt, t1, t2, worker mono, realtime offset)
    same_host = False
    for _ in range(tries):
        t1, r1 = _core.now_ns(), time.time_ns()
        reading = ask()
        t2, r2 = _core.now_ns(), time.time_ns()
        same_host = reading.boot_id is not None and reading.boot_id == boot_id()
        rtt = t2 - t1
        real_offset = (r1 + r2) // 2 - reading.realtime_ns
        if best is None or rtt < best[0]:
            best = (rtt, t1, t2, reading.monotonic_ns, real_offset)
    assert best is not None
    rtt, t1, t2, w, real_offset = best
    if same_host:
        return ClockOffset(0, 0, rtt, real_offset, "same clock", tries)
    return ClockOffset((t1 + t2) // 2 - w, (rtt + 1) // 2, rtt, real_offset, "round trip", tries)
