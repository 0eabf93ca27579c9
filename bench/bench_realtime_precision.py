"""The realtime transport's precision against the realtime emulator's truth (docs/voice.md,
"Realtime transcription"): sessions of espeak-ng speech at N concurrent, the emulator in its own
process (no GIL shared with the client), and per session

- the final transcript's error: the client's stamp of the final event (at its socket read) − the
  emulator's stamp right before its socket write (what end of speech → final transcript is off by: end of speech is the client's
  own schedule, so the whole error is in this receive stamp);
- the frames' send lateness: each frame's write stamp − its due instant (the client's pacing), as
  the session's p50, p99 and max.

`--pacing native,loop` measures both pacers in turn in one run: `native`, the sender thread
(`_core.FramePacer`, what ws:// sessions use), and `loop`, the event loop's own sleep-then-yield
pacing (what wss:// sessions use, and every session before issue 36's pacer).

Printed as p50 / p99 / max over sessions, with the machine's load average (a loaded machine's
figures are upper bounds). Sessions are matched to the truth by their audio's bytes, then in order.
The measurement is `pytps calibrate --realtime`'s (pytps/calibrate/realtime.py); this adds `--pacing`.

    python bench/bench_realtime_precision.py [--sessions 16] [--concurrency 1,8,32] [--pacing native,loop]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from pytps.calibrate.realtime import measure_realtime
from pytps.transport import realtime


def measure(concurrency: int, sessions: int, frame_ms: float, pacing: str = "native") -> dict[str, Any]:
    native = realtime._WebSocket.start_pacing
    if pacing == "loop":  # a connection that declines the sender thread is paced by the loop
        realtime._WebSocket.start_pacing = lambda self, pacer: False  # type: ignore[method-assign]
    try:
        return measure_realtime(concurrency, sessions, frame_ms)
    finally:
        realtime._WebSocket.start_pacing = native  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--frame-ms", type=float, default=20.0)
    ap.add_argument("--pacing", default="native", help="native, loop, or both in turn: native,loop")
    a = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    print("pacing  concurrency  sessions  final error µs p50 / p99 / max   frame lateness p99 µs p50 / max   max µs")
    for c in (int(x) for x in a.concurrency.split(",")):
        for pacing in a.pacing.split(","):
            m = measure(c, max(a.sessions, c), a.frame_ms, pacing)
            e, p, x = m["final_err_us"], m["late_p99_us"], m["late_max_us"]
            print(f"{pacing:<6}  {c:11d}  {m['sessions']:8d}  {np.percentile(e, 50):9.0f} / {np.percentile(e, 99):6.0f}"
                  f" / {e.max():6.0f}   {np.percentile(p, 50):12.0f} / {p.max():6.0f}   {x.max():6.0f}")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
