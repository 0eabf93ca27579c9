"""Start-up figures: process start → listening socket → ready → first token, for the cold start
and for `--serve-starts N` warm ones (each summarised with percentiles)."""

from __future__ import annotations

import statistics
from typing import Any

STEPS = ("listening_s", "ready_s", "first_token_s")


def summarize_starts(starts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per step: n, mean, sd, min, p50, p90, p99, max over the starts that reached it."""
    out: dict[str, Any] = {"n": len(starts)}
    for step in STEPS:
        values = sorted(float(s[step]) for s in starts if s.get(step) is not None)
        if not values:
            out[step] = None
            continue
        out[step] = {
            "n": len(values),
            "mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": values[0],
            "p50": _pct(values, 0.50),
            "p90": _pct(values, 0.90),
            "p99": _pct(values, 0.99),
            "max": values[-1],
        }
    return out


def _pct(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), as the run's percentiles."""
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def startup_line(name: str, cold: dict[str, Any], warm: dict[str, Any] | None) -> str:
    """One console line: the cold start's steps, and the warm starts' medians."""

    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v * 1e3:.1f}"

    text = (
        f"{name}: start-up (ms) listening {ms(cold.get('listening_s'))}, ready {ms(cold.get('ready_s'))}, "
        f"first token {ms(cold.get('first_token_s'))}"
    )
    if warm and warm.get("n"):
        parts = []
        for step in STEPS:
            s = warm.get(step)
            if s:
                parts.append(
                    f"{step[:-2].replace('_', ' ')} {s['p50'] * 1e3:.1f} ± {s['sd'] * 1e3:.1f} "
                    f"[{s['min'] * 1e3:.1f}–{s['max'] * 1e3:.1f}]"
                )
        text += f"; {warm['n']} warm starts, median ± σ [range]: " + ", ".join(parts)
    return text


def store_figures(startup: dict[str, Any] | None) -> dict[str, float]:
    """The start-up as results-store figures: server_<step> of the cold start, and
    server_<step>_warm_<p50|p90|p99> of the warm starts (seconds)."""
    out: dict[str, float] = {}
    if not startup:
        return out
    cold = startup.get("cold") or {}
    warm = startup.get("warm") or {}
    for step in STEPS:
        if cold.get(step) is not None:
            out[f"server_{step}"] = float(cold[step])
        stats = warm.get(step)
        if stats:
            for q in ("p50", "p90", "p99"):
                out[f"server_{step[:-2]}_warm_{q}_s"] = float(stats[q])
    return out
