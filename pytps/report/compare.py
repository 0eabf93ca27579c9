"""`pytps compare`: saved runs side by side, each difference from the baseline with a bootstrap 95%
confidence interval, and warnings when the runs were not measured alike (docs/compare.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.measure.bootstrap import point, resample
from pytps.measure.catalogue import Metric, metric
from pytps.report.paired import accuracy_diff, pairing_warnings
from pytps.results.folder import SavedResults
from pytps.results.rebuild import load_saved

# Per-request metrics, from the journals (labels, units, scales: measure/catalogue).
REQUEST_METRICS = tuple(metric(k) for k in ("ttft_s", "tpot_s", "e2e_s", "decode_tps", "user_tps"))
# Run-level figures, from results.json: one value per run, so an interval needs repeated runs.
RUN_METRICS = tuple(metric(k) for k in ("output_throughput_tps", "request_throughput_rps", "joules_per_output_token"))
STATS = ("mean", "p50")


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


def _peer_aggregates(side: Side, key: str) -> dict[str, Any] | None:
    """A side of one imported run whose peer kept only aggregates (pytps import): the peer's own
    statistics of `key`, which stand for the requests it did not keep. None for every other side."""
    if len(side.runs) != 1:
        return None
    run = side.runs[0]
    imported = run.meta.get("imported")
    if not isinstance(imported, dict) or imported.get("per_request", True):
        return None
    stats = run.summary.get(key)
    return stats if isinstance(stats, dict) else {}


def _stat(values: Sequence[np.ndarray], stat: str, kept: dict[str, Any] | None) -> float | None:
    if kept is None:
        return point(values, stat)
    value = kept.get(stat)
    return float(value) if isinstance(value, (int, float)) else None


def _aggregate_diff(base: float | None, other: float | None) -> dict[str, Any]:
    """other − base where a side is a peer's aggregate: no requests to resample, so no interval."""
    diff = None if base is None or other is None else other - base
    return Diff(base, other, diff, _rel(diff, base), None, None).as_dict()


def _described(m: Metric) -> dict[str, Any]:
    """A metric's entry in the comparison: its key, and how to show it (from the catalogue)."""
    return {"key": m.key, "label": m.label, "unit": m.unit, "scale": m.scale, "better": m.better}


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
    for m in REQUEST_METRICS:
        per_side = [[run.values(m.key) for run in side.runs] for side in sides]
        kept = [_peer_aggregates(side, m.key) for side in sides]
        if not any(sum(r.size for r in s) for s in per_side) and not any(kept):
            continue
        entry: dict[str, Any] = {
            **_described(m),
            "level": "request",
            "n": [int(sum(r.size for r in s)) for s in per_side],
            "stats": {},
        }
        for stat in STATS:
            entry["stats"][stat] = {
                "values": [_stat(s, stat, k) for s, k in zip(per_side, kept, strict=True)],
                "diffs": [
                    _aggregate_diff(_stat(per_side[0], stat, kept[0]), _stat(s, stat, k))
                    if kept[0] is not None or k is not None
                    else bootstrap_diff(per_side[0], s, stat, resamples, rng).as_dict()
                    for s, k in zip(per_side[1:], kept[1:], strict=True)
                ],
            }
        metrics.append(entry)
    for m in RUN_METRICS:
        per_side_runs = [[run.summary.get(m.key) for run in side.runs] for side in sides]
        vals = [[float(v) for v in s if isinstance(v, (int, float))] for s in per_side_runs]
        if not any(vals):
            continue
        metrics.append(
            {
                **_described(m),
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
    accuracy = []
    warnings = comparability_warnings(sides, max_days)
    for side in sides[1:]:
        d = accuracy_diff(base.runs, side.runs)
        if d is not None:
            accuracy.append({"side": side.label, **d})
            warnings += pairing_warnings(side.label, base.label, d)
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
        # Graded answers paired item by item (pytps.report.paired): one entry per side, when graded.
        "accuracy": accuracy,
        "warnings": warnings,
    }


def side_labels(count: int) -> list[str]:
    """A, B, …, Z, then S27, S28, …: short column headers, each named in a legend."""
    return [chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(count)]
