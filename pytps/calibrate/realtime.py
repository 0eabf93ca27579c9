"""The realtime transport's precision (`pytps calibrate --realtime`): sessions of espeak-ng speech
against the realtime emulator, in its own process (no GIL shared with the client), and per session

- the final transcript's stamp error: the client's stamp of the final event (at its socket read)
  − the emulator's stamp right before its socket write. End of speech is the client's own
  schedule, so this is the whole error of end of speech → final transcript;
- the frames' lateness: each frame's write stamp − its due instant (the client's pacing).

A row of concurrency passes when the final error's p99 and the sessions' worst p99 frame lateness
are both within the threshold (`--max-stamp-p99-ms`, 1 ms by default, as the issue's bound).
The HTTP transports' ladder (rates × concurrency) has no meaning here: speech has one rate."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pytps.runner.voice_realtime import RealtimeSettings, realtime_emulator_process, run_realtime_sync
from pytps.workload.speech_inputs import espeak_items, spoken_texts

ESPEAK_RATE_HZ = 22050  # espeak-ng's sample rate: the truth's audio bytes are matched at it


def _matched(rows: list[dict[str, Any]], truth: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(client final stamp, truth final stamp) per session, matched by audio bytes then in order."""
    by_bytes: dict[int, list[int]] = {}
    for t in sorted(truth, key=lambda t: int(t["final_sent_ns"])):
        by_bytes.setdefault(int(t["audio_bytes"]), []).append(int(t["final_sent_ns"]))
    out = []
    for r in sorted(rows, key=lambda r: int(r["t_final_ns"])):
        key = round(r["input_audio_s"] * ESPEAK_RATE_HZ * 2)
        out.append((int(r["t_final_ns"]), by_bytes[key].pop(0)))
    return out


def measure_realtime(concurrency: int, sessions: int, frame_ms: float = 20.0) -> dict[str, Any]:
    """One row: `sessions` sessions at `concurrency`, against a fresh realtime emulator. Arrays
    in µs: each session's final transcript error, p99 and max frame lateness."""
    items = tuple(espeak_items(spoken_texts(sessions, seed=11, words=6)))
    with tempfile.TemporaryDirectory() as tmp:
        truth_path = Path(tmp) / "truth.json"
        with realtime_emulator_process(truth_path, ESPEAK_RATE_HZ) as url:
            settings = RealtimeSettings(url, "m", items, sessions=sessions, concurrency=concurrency, frame_ms=frame_ms)
            out = run_realtime_sync(settings)
        truth = json.loads(truth_path.read_text())
    rows = [r for r in out["sessions"] if r["ok"]]
    return {
        "concurrency": concurrency,
        "sessions": len(rows),
        "failed": sessions - len(rows),
        "final_err_us": np.array([(c - t) / 1e3 for c, t in _matched(rows, truth)]),
        "late_p99_us": np.array([r["frame_late_p99_s"] * 1e6 for r in rows]),
        "late_max_us": np.array([r["frame_late_max_s"] * 1e6 for r in rows]),
    }


def _stat(a: np.ndarray, q: float) -> float | None:
    return float(np.percentile(a, q)) if len(a) else None


def realtime_rows(concurrency: tuple[int, ...], sessions: int, max_p99_ms: float) -> list[dict[str, Any]]:
    """Each concurrency's figures (JSON-ready) and verdict."""
    rows = []
    for c in concurrency:
        m = measure_realtime(c, max(sessions, c))
        err, late = m["final_err_us"], m["late_p99_us"]
        row = {
            "concurrency": c,
            "sessions": m["sessions"],
            "failed": m["failed"],
            "final_error_p50_us": _stat(err, 50),
            "final_error_p99_us": _stat(err, 99),
            "final_error_max_us": float(err.max()) if len(err) else None,
            "frame_late_p99_median_us": _stat(late, 50),
            "frame_late_p99_worst_us": float(late.max()) if len(late) else None,
            "frame_late_max_us": float(m["late_max_us"].max()) if len(late) else None,
        }
        limit_us = max_p99_ms * 1e3
        row["passed"] = bool(
            m["failed"] == 0
            and row["final_error_p99_us"] is not None
            and row["final_error_p99_us"] <= limit_us
            and row["frame_late_p99_worst_us"] is not None
            and row["frame_late_p99_worst_us"] <= limit_us
        )
        rows.append(row)
    return rows


def print_realtime(rows: list[dict[str, Any]], max_p99_ms: float) -> None:
    def n(v: float | None) -> str:
        return "–" if v is None else f"{v:,.0f}"

    print(
        "realtime (WebSocket, 20 ms frames): the final transcript's stamp error and the frames' lateness, "
        f"limit {max_p99_ms:g} ms"
    )
    print(
        "  conc  sessions  final error µs p50 / p99 / max   frame lateness p99 µs median / worst   latest µs  verdict"
    )
    for r in rows:
        err = f"{n(r['final_error_p50_us'])} / {n(r['final_error_p99_us'])} / {n(r['final_error_max_us'])}"
        late = f"{n(r['frame_late_p99_median_us'])} / {n(r['frame_late_p99_worst_us'])}"
        failed = f" ({r['failed']} failed)" if r["failed"] else ""
        verdict = "pass" if r["passed"] else "FAIL"
        latest = n(r["frame_late_max_us"])
        print(f"  {r['concurrency']:>4}  {r['sessions']:>8}{failed}  {err:>30}   {late:>32}   {latest:>9}  {verdict}")
