"""A voice run's summary, from its request rows (pytps.runner.voice.request_row): each per-request
figure as mean, standard deviation, range and percentiles over the successful requests, and the
run's aggregates (docs/metrics.md, "Voice"): audio throughput (audio seconds per wall second,
all streams together: never a per-stream figure), the share of requests that stalled, and WER /
CER over all words (errors summed over summed reference words, as jiwer's corpus WER)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SPEECH_FIGURES", "TRANSCRIPTION_FIGURES", "describe", "summarize_voice"]

SPEECH_FIGURES = (
    "ttfb_s",
    "ttfa_s",
    "first_playable_s",
    "audio_s",
    "generation_s",
    "rtf",
    "inverse_rtf",
    "stalls",
    "stalled_s",
)
TRANSCRIPTION_FIGURES = ("input_audio_s", "first_text_s", "final_s", "rtfx", "wer")


def describe(values: Sequence[float]) -> dict[str, float] | None:
    """mean, sd, min, max, p50, p90, p99 and count of the values (None when there are none)."""
    if not values:
        return None
    a = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {
        "mean": float(a.mean()),
        "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
        "min": float(a.min()),
        "max": float(a.max()),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "count": len(a),
    }


def summarize_voice(api: str, rows: Sequence[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    ok = [r for r in rows if r.get("ok")]
    names = SPEECH_FIGURES if api == "openai-speech" else TRANSCRIPTION_FIGURES
    out: dict[str, Any] = {
        "requests": len(rows),
        "ok": len(ok),
        "errors": len(rows) - len(ok),
        "wall_s": wall_s,
        "figures": {n: describe([float(r[n]) for r in ok if r.get(n) is not None]) for n in names},
    }
    if api == "openai-speech":
        audio = sum(float(r["audio_s"]) for r in ok)
        out["audio_s_total"] = audio
        out["audio_throughput"] = audio / wall_s if wall_s > 0 else None
        out["stalled_requests"] = sum(1 for r in ok if r["stalls"] > 0)
        out["stall_ms"] = describe([d for r in ok for d in r["stall_ms"]])
    else:
        audio = sum(float(r["input_audio_s"]) for r in ok)
        out["audio_s_total"] = audio
        out["audio_throughput"] = audio / wall_s if wall_s > 0 else None
        graded = [r for r in ok if r.get("ref_words") is not None]
        words = sum(int(r["ref_words"]) for r in graded)
        chars = sum(int(r["ref_chars"]) for r in graded)
        out["graded"] = len(graded)
        out["wer"] = sum(int(r["word_errors"]) for r in graded) / words if words else None
        out["cer"] = sum(int(r["char_errors"]) for r in graded) / chars if chars else None
        out["ref_words"] = words
        out["word_errors"] = sum(int(r["word_errors"]) for r in graded)
    return out
