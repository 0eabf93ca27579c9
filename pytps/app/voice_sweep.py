"""`pytps sweep --api openai-speech | openai-transcriptions --concurrency LIST`: one voice run per
concurrency (each a whole `pytps run`, into <out>/cells/concurrency=N/), the curve of the service's
voice figures against load, and its knee (docs/voice.md, "Sweeping concurrency"; docs/metrics.md,
"Voice sweeps"). Writes <out>/voice_sweep.json and returns it with the folder."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytps.app.runs import results_folder
from pytps.app.voice import voice_job
from pytps.errors import ConfigError
from pytps.results.files import VOICE_SWEEP

__all__ = ["VOICE_SWEEP_COLUMNS", "voice_knee", "voice_sweep"]

Say = Callable[[str], None]

#: A cell's row: the store's figures of its summary (pytps.store.voice_entry.voice_figures) that
#: the sweep shows, by API.
VOICE_SWEEP_COLUMNS: dict[str, tuple[str, ...]] = {
    "openai-speech": ("ttfa_p50", "ttfa_p90", "ttfa_p99", "rtf_p50", "stall_rate", "stalled_p99", "audio_throughput"),
    "openai-transcriptions": ("first_text_p50", "final_p50", "final_p99", "rtfx_p50", "wer", "audio_throughput"),
}


def _row(api: str, concurrency: int, summary: Mapping[str, Any]) -> dict[str, Any]:
    from pytps.store.voice_entry import voice_figures

    flat = voice_figures(api, summary)
    row: dict[str, Any] = {"concurrency": concurrency, "requests": summary["requests"], "ok": summary["ok"]}
    for key in VOICE_SWEEP_COLUMNS[api]:
        row[key] = flat.get(key)
    return row


def voice_knee(api: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The knee of a voice service: text to speech, the highest concurrency before the first at
    which any request's playback stalled (None when the lowest stalls already); speech to text,
    the highest concurrency before RTFx p50 first falls below 1 (slower than real time)."""
    if api == "openai-speech":
        bad = [r["concurrency"] for r in rows if (r.get("stall_rate") or 0) > 0 or not r["ok"]]
        rule = "no request stalled"
    else:
        bad = [r["concurrency"] for r in rows if r.get("rtfx_p50") is None or r["rtfx_p50"] < 1]
        rule = "RTFx p50 at least 1"
    first_bad = min(bad) if bad else None
    good = [r["concurrency"] for r in rows if first_bad is None or r["concurrency"] < first_bad]
    return {"concurrency": max(good) if good else None, "rule": rule, "first_failing": first_bad}


def voice_sweep(opts: Mapping[str, Any], say: Say) -> tuple[dict[str, Any], Path]:
    """Each concurrency of opts["concurrency"] (a list, or the flag's text: 1,2,4 or 1..64) as a
    voice run (pytps.app.voice.voice_job) against one endpoint: the built-in emulator is started
    per cell, with the same settings."""
    from pytps.sweep.cells import parse_axis

    api = opts["api"]
    if api not in VOICE_SWEEP_COLUMNS:
        raise ConfigError(f"--api {api}: a voice sweep is of openai-speech or openai-transcriptions")
    if opts.get("rate") is not None:
        raise ConfigError("a voice sweep sweeps --concurrency only (no --rate)")
    given = opts.get("concurrency")
    if given is None:
        raise ConfigError("a voice sweep needs --concurrency LIST, e.g. --concurrency 1,2,4,8")
    levels = sorted(set(given)) if isinstance(given, (list, tuple)) else parse_axis("concurrency", str(given))
    out_dir = results_folder(opts.get("out"), "voice-sweep")
    rows: list[dict[str, Any]] = []
    for c in levels:
        cell = out_dir / "cells" / f"concurrency={c}"
        say(f"sweep: concurrency {c} ({len(rows) + 1}/{len(levels)})")
        data, _ = voice_job({**opts, "concurrency": c, "out": str(cell)}, lambda _line: None)
        row = _row(api, c, data["summary"])
        row["dir"] = str(cell.relative_to(out_dir))
        rows.append(row)
    meta = dict(data["metadata"])
    meta.pop("concurrency", None)
    meta.pop("date_utc", None)
    index = {"kind": "voice-sweep", "api": api, "axis": "concurrency", "metadata": meta, "cells": rows,
             "knee": voice_knee(api, rows)}  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (VOICE_SWEEP + ".tmp")
    tmp.write_text(json.dumps(index, indent=1))
    tmp.replace(out_dir / VOICE_SWEEP)
    return index, out_dir
