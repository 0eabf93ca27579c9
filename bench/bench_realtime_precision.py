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

    python bench/bench_realtime_precision.py [--sessions 16] [--concurrency 1,8,32] [--pacing native,loop]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pytps.runner.voice_realtime import RealtimeSettings, run_realtime_sync
from pytps.transport import realtime
from pytps.workload.speech_inputs import espeak_items, spoken_texts


def _matched(rows: list[dict[str, Any]], truth: list[dict[str, Any]], rate: int) -> list[tuple[int, int]]:
    """(client final stamp, truth final stamp) per session, matched by audio bytes then in order."""
    by_bytes: dict[int, list[int]] = {}
    for t in sorted(truth, key=lambda t: int(t["final_sent_ns"])):
        by_bytes.setdefault(int(t["audio_bytes"]), []).append(int(t["final_sent_ns"]))
    out = []
    for r in sorted(rows, key=lambda r: int(r["t_final_ns"])):
        key = round(r["input_audio_s"] * rate * 2)
        out.append((int(r["t_final_ns"]), by_bytes[key].pop(0)))
    return out


def measure(concurrency: int, sessions: int, frame_ms: float, pacing: str = "native") -> dict[str, Any]:
    native = realtime._WebSocket.start_pacing
    if pacing == "loop":  # a connection that declines the sender thread is paced by the loop
        realtime._WebSocket.start_pacing = lambda self, pacer: False  # type: ignore[method-assign]
    try:
        return _measure(concurrency, sessions, frame_ms)
    finally:
        realtime._WebSocket.start_pacing = native  # type: ignore[method-assign]


def _measure(concurrency: int, sessions: int, frame_ms: float) -> dict[str, Any]:
    items = tuple(espeak_items(spoken_texts(sessions, seed=11, words=6)))
    rate = 22050  # espeak-ng's
    with tempfile.TemporaryDirectory() as tmp:
        truth_path = Path(tmp) / "truth.json"
        proc = subprocess.Popen([sys.executable, "-m", "pytps.realtime_emulator", str(truth_path), str(rate)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stdout is not None and proc.stdin is not None
        url = f"ws://127.0.0.1:{proc.stdout.readline().strip()}/v1/realtime"
        out = run_realtime_sync(RealtimeSettings(url, "m", items, sessions=sessions, concurrency=concurrency,
                                                 shape="openai", frame_ms=frame_ms))  # fmt: skip
        proc.stdin.close()
        proc.wait(30)
        truth = json.loads(truth_path.read_text())
    rows = [r for r in out["sessions"] if r["ok"]]
    err_us = np.array([(c - t) / 1e3 for c, t in _matched(rows, truth, rate)])
    late_p99_us = np.array([r["frame_late_p99_s"] * 1e6 for r in rows])
    late_max_us = np.array([r["frame_late_max_s"] * 1e6 for r in rows])
    return {"concurrency": concurrency, "sessions": len(rows), "final_err_us": err_us,
            "late_p99_us": late_p99_us, "late_max_us": late_max_us}  # fmt: skip


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
