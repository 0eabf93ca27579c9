"""`pytps compare`: saved runs side by side, each difference from the baseline with a bootstrap 95%
confidence interval, and warnings when the runs were not measured alike (docs/compare.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.results.folder import SavedResults
from pytps.results.rebuild import load_saved

# Per-request metrics, from the journals: (key, label, display scale, display unit).
REQUEST_METRICS = (
    ("ttft_s", "TTFT", 1e3, "ms"),
    ("tpot_s", "TPOT", 1e3, "ms"),
    ("e2e_s", "E2E", 1e3, "ms"),
    ("decode_tps", "decode speed/user", 1.0, "tok/s"),
    ("user_tps", "E2E speed/user", 1.0, "tok/s"),
)
# Run-level figures, from results.json: one value per run, so an interval needs repeated runs.
RUN_METRICS = (
    ("output_throughput_tps", "output throughput", 1.0, "tok/s"),
    ("request_throughput_rps", "request throughput", 1.0, "req/s"),
)
STATS = ("mean", "p50")
# Resampled statistics are computed in blocks of about this many values, so memory stays bounded
# however long the runs (2,000 resamples of 100,000 requests would otherwise be 1.6 GB).
BLOCK_VALUES = 4_000_000


class Run(SavedResults):
    """One saved run: its results.json and journal."""


@dataclass
class Side:
    """One column of the comparison: one run, or several repeated runs of the same setup."""

    label: str
    runs: list[Run] = field(default_factory=list)

    @property
    def spec(self) -> str:
        return ",".join(str(r.path) for r in self.runs)


def load_run(path: str | Path) -> Run:
    return Run(*load_saved(path, need_journal=True))


def load_side(spec: str, label: str) -> Side:
    """`DIR` or `DIR1,DIR2,…` (repeated runs of one setup)."""
    paths = [s for s in spec.split(",") if s.strip()]
    if not paths:
        raise ConfigError(f"empty run list {spec!r}: give a results directory, or several joined by commas")
    return Side(label, [load_run(s.strip()) for s in paths])


# ---- the bootstrap ---------------------------------------------------------------------------


def _stat_fn(stat: str) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic along the last axis, NaN (padding) ignored."""
    if stat == "mean":
        return lambda a: np.nanmean(a, axis=-1)
    if stat == "p50":
        return lambda a: np.nanmedian(a, axis=-1)
    raise ValueError(stat)


def point(runs: Sequence[np.ndarray], stat: str) -> float | None:
    """The statistic of a side: over all its measured requests pooled."""
    pooled = np.concatenate(list(runs)) if runs else np.empty(0)
    if pooled.size == 0:
        return None
    return float(np.mean(pooled) if stat == "mean" else np.median(pooled))


def resample(runs: Sequence[np.ndarray], stat: str, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`resamples` bootstrap replicates of the statistic of a side's pooled requests.

    One run: resample its requests with replacement. Several runs: a two-level bootstrap, so the
    spread covers run-to-run variation too: draw as many runs as there are, with replacement, then
    resample each drawn run's requests with replacement, and pool. Vectorized: a block of replicates
    is one (replicates, runs, longest run) array, each run's short rows padded with NaN.
    """
    runs = [np.asarray(r, dtype=np.float64) for r in runs]
    if not runs or any(r.size == 0 for r in runs):
        raise ValueError("every run needs at least one value")
    fn = _stat_fn(stat)
    k = len(runs)
    sizes = np.array([r.size for r in runs])
    longest = int(sizes.max())
    padded = np.full((k, longest), np.nan)
    for i, r in enumerate(runs):
        padded[i, : r.size] = r
    out = np.empty(resamples)
    block = max(1, BLOCK_VALUES // (k * longest))
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        # Which runs each replicate draws (all the one run when there is one: no draw, no RNG use,
        # so a single-run side is the plain one-level bootstrap).
        chosen = rng.integers(0, k, size=(b, k)) if k > 1 else np.zeros((b, 1), dtype=np.int64)
        n = sizes[chosen]  # (b, k): each drawn run's own request count
        idx = (rng.random((b, k, longest)) * n[..., None]).astype(np.int64)
        vals = padded[chosen[..., None], idx]
        vals[np.arange(longest)[None, None, :] >= n[..., None]] = np.nan
        out[start : start + b] = fn(vals.reshape(b, k * longest))
    return out


@dataclass
class Diff:
    base: float | None
    other: float | None
    diff: float | None
    rel: float | None
    ci95: tuple[float, float] | None
    rel_ci95: tuple[float, float] | None

    @property
    def significant(self) -> bool:
        """The interval leaves out 0: the data say the two differ, in the interval's direction."""
        return self.ci95 is not None and (self.ci95[0] > 0 or self.ci95[1] < 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.base,
            "value": self.other,
            "diff": self.diff,
            "rel": self.rel,
            "ci95": list(self.ci95) if self.ci95 else None,
            "rel_ci95": list(self.rel_ci95) if self.rel_ci95 else None,
            "significant": self.significant,
        }


def _rel(diff: float | None, base: float | None) -> float | None:
    return None if diff is None or not base else diff / base


def bootstrap_diff(
    base: Sequence[np.ndarray], other: Sequence[np.ndarray], stat: str, resamples: int, rng: np.random.Generator
) -> Diff:
    """other − base of the statistic, with a percentile bootstrap 95% interval (each side resampled
    independently). No interval when a side has a run without values, or fewer than 2 values."""
    b, o = point(base, stat), point(other, stat)
    diff = None if b is None or o is None else o - b
    usable = all(len(side) and all(r.size for r in side) and sum(r.size for r in side) >= 2 for side in (base, other))
    if diff is None or not usable:
        return Diff(b, o, diff, _rel(diff, b), None, None)
    rb = resample(base, stat, resamples, rng)
    ro = resample(other, stat, resamples, rng)
    d = ro - rb
    lo, hi = np.percentile(d, [2.5, 97.5])
    rel_ci = None
    if np.all(rb != 0):
        rlo, rhi = np.percentile(ro / rb - 1.0, [2.5, 97.5])
        rel_ci = (float(rlo), float(rhi))
    return Diff(b, o, diff, _rel(diff, b), (float(lo), float(hi)), rel_ci)


def run_level_diff(base: Sequence[float], other: Sequence[float], resamples: int, rng: np.random.Generator) -> Diff:
    """A run-level figure (one value per run): the means' difference; an interval from resampling
    runs only when both sides have at least 2 runs, since one run says nothing of its spread."""
    if not base or not other:
        return Diff(None, None, None, None, None, None)
    if len(base) < 2 or len(other) < 2:
        b, o = float(np.mean(base)), float(np.mean(other))
        return Diff(b, o, o - b, _rel(o - b, b), None, None)
    # Each run's value is one "request" of a one-run side: resampling them is the run level alone.
    return bootstrap_diff([np.asarray(base)], [np.asarray(other)], "mean", resamples, rng)


# ---- comparability ---------------------------------------------------------------------------


def _fields(run: Run) -> dict[str, Any]:
    m = run.meta
    wl = m.get("workload") or {}
    load = m.get("load") or {}
    return {
        "model": m.get("model"),
        "API": m.get("api"),
        "input length": wl.get("input_tokens") if wl.get("kind") != "dataset" else wl.get("source"),
        "output length": wl.get("output_tokens"),
        "load mode": load.get("mode"),
        "concurrency": load.get("concurrency"),
        "rate (req/s)": load.get("rate_rps"),
        "token source": run.summary.get("token_source"),
        "transport": m.get("transport"),
        "HTTP/2": m.get("http2"),
    }


def _date(run: Run) -> datetime | None:
    text = run.meta.get("date_utc")
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def comparability_warnings(sides: Sequence[Side], max_days: float) -> list[str]:
    """What differs between the runs beside the endpoint itself: each makes a difference in the
    figures less attributable to the endpoint."""
    out: list[str] = []
    runs = [(side.label, i, run) for side in sides for i, run in enumerate(side.runs)]

    def name(label: str, i: int, side: Side) -> str:
        return label if len(side.runs) == 1 else f"{label}{i + 1}"

    side_of = {s.label: s for s in sides}
    ref_label, _, ref = runs[0]
    ref_fields = _fields(ref)
    for key, ref_value in ref_fields.items():
        differing = [
            f"{name(label, i, side_of[label])}={_fields(run)[key]}"
            for label, i, run in runs[1:]
            if _fields(run)[key] != ref_value
        ]
        if differing:
            out.append(f"Different {key}: {ref_label}={ref_value}, " + ", ".join(differing) + ".")
    dates = [d for d in (_date(run) for _, _, run in runs) if d is not None]
    if len(dates) >= 2:
        days = (max(dates) - min(dates)).total_seconds() / 86400
        if days > max_days:
            out.append(
                f"The runs are {days:.1f} days apart (more than --max-days {max_days:g}): the endpoint, "
                "its load or the network may have changed in between."
            )
    for side in sides:
        for i, run in enumerate(side.runs):
            n = int(run.summary.get("requests_ok") or 0)
            if n < 30:
                out.append(
                    f"{name(side.label, i, side)} has {n} successful requests: its intervals are rough "
                    "(30 or more is better)."
                )
    return out


# ---- the comparison --------------------------------------------------------------------------


def compare(sides: Sequence[Side], *, resamples: int = 2000, seed: int = 0, max_days: float = 7.0) -> dict[str, Any]:
    """Every other side against the first (the baseline), as a JSON-able dict (docs/compare.md)."""
    if len(sides) < 2:
        raise ConfigError("compare needs at least two runs (or run lists): a baseline and one to set against it")
    if resamples < 100:
        raise ConfigError(f"--resamples {resamples}: use at least 100 (2,000 gives stable 95% intervals)")
    if not (max_days > 0 and math.isfinite(max_days)):
        raise ConfigError(f"--max-days {max_days}: give a positive number of days")
    # One generator for the whole comparison, drawn in a fixed order: the same inputs and seed give
    # the same intervals, digit for digit.
    rng = np.random.default_rng(seed)
    base = sides[0]
    metrics = []
    for key, label, scale, unit in REQUEST_METRICS:
        per_side = [[run.values(key) for run in side.runs] for side in sides]
        if not any(sum(r.size for r in s) for s in per_side):
            continue
        entry: dict[str, Any] = {
            "key": key,
            "label": label,
            "unit": unit,
            "scale": scale,
            "level": "request",
            "n": [int(sum(r.size for r in s)) for s in per_side],
            "stats": {},
        }
        for stat in STATS:
            entry["stats"][stat] = {
                "values": [point(s, stat) for s in per_side],
                "diffs": [bootstrap_diff(per_side[0], s, stat, resamples, rng).as_dict() for s in per_side[1:]],
            }
        metrics.append(entry)
    for key, label, scale, unit in RUN_METRICS:
        per_side_runs = [[run.summary.get(key) for run in side.runs] for side in sides]
        vals = [[float(v) for v in s if isinstance(v, (int, float))] for s in per_side_runs]
        if not any(vals):
            continue
        metrics.append(
            {
                "key": key,
                "label": label,
                "unit": unit,
                "scale": scale,
                "level": "run",
                "n": [len(v) for v in vals],
                "stats": {
                    "mean": {
                        "values": [float(np.mean(v)) if v else None for v in vals],
                        "diffs": [run_level_diff(vals[0], v, resamples, rng).as_dict() for v in vals[1:]],
                    }
                },
            }
        )
    return {
        "baseline": base.label,
        "sides": [
            {
                "label": s.label,
                "runs": [str(r.path) for r in s.runs],
                "requests": int(sum(len(r.values("e2e_s")) for r in s.runs)),
            }
            for s in sides
        ],
        "seed": seed,
        "resamples": resamples,
        "confidence": 0.95,
        "metrics": metrics,
        "warnings": comparability_warnings(sides, max_days),
    }


def side_labels(count: int) -> list[str]:
    """A, B, …, Z, then S27, S28, …: short column headers, each named in a legend."""
    return [chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(count)]
