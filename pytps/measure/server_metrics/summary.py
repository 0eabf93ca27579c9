"""The run's server_metrics summary from its scrapes (docs/metrics.md, "Server metrics"):
gauges over the steady window (mean, p50, max), counters' delta and rate over the run and the
steady window, histograms as Prometheus's histogram_quantile of their deltas over the run, and
the derived figures (measure/server_metrics/derived)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.server_metrics.derived import derived_figures
from pytps.measure.server_metrics.engines import BOUNDS
from pytps.measure.server_metrics.histogram import histogram_quantile
from pytps.measure.server_metrics.parse import Scrape
from pytps.measure.server_metrics.series import Hist, Series, build

NS_PER_S = 1_000_000_000
#: The scrapes file and the raw bodies' file in the results folder (docs/results.md).
QUANTILES = (0.5, 0.9, 0.99)
Intervals = Sequence[tuple[int, int]]


def read_scrapes(path: Path) -> Iterator[Scrape]:
    """Every whole line of a server_metrics.jsonl (a torn last line is skipped)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield Scrape.from_json(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue


def _inside(times: Sequence[int], steady: Intervals) -> list[int]:
    """Which scrapes' midpoints fall inside a steady interval: per interval, their indexes."""
    return [i for i, t in enumerate(times) if any(a <= t <= b for a, b in steady)]


def _gauge(values: list[float], idx: list[int]) -> dict[str, float] | None:
    v = np.asarray([values[i] for i in idx], dtype=float)
    v = v[~np.isnan(v)]
    if not len(v):
        return None
    return {"mean": float(v.mean()), "p50": float(np.percentile(v, 50)), "max": float(v.max()), "scrapes": len(v)}


def _counter_run(s: Series, name: str) -> dict[str, float | None] | None:
    values, times = s.values[name], s.times_ns
    known = [i for i, v in enumerate(values) if not math.isnan(v)]
    if len(known) < 2:
        return None
    span_s = (times[known[-1]] - times[known[0]]) / NS_PER_S
    delta = s.increase(name)
    return {"delta": delta, "rate_per_s": delta / span_s if span_s > 0 else None, "span_s": span_s}


def _counter_steady(s: Series, name: str, steady: Intervals) -> dict[str, float] | None:
    """Increase and its time, summed over the steady intervals (scrapes inside each)."""
    values, times = s.values[name], s.times_ns
    delta = span = 0.0
    for a, b in steady:
        idx = [i for i, t in enumerate(times) if a <= t <= b and not math.isnan(values[i])]
        if len(idx) >= 2:
            delta += s.increase(name, idx)
            span += (times[idx[-1]] - times[idx[0]]) / NS_PER_S
    if span <= 0:
        return None
    return {"delta": delta, "rate_per_s": delta / span, "span_s": span}


def _hist_delta(col: list[Hist | None]) -> Hist | None:
    known = [h for h in col if h is not None]
    if len(known) < 2:
        return None
    first, last = known[0], known[-1]
    if last.count < first.count:  # a reset inside the run: the last reading is all there is
        return last
    return Hist(
        buckets={b: c - first.buckets.get(b, 0.0) for b, c in last.buckets.items()},
        sum=last.sum - first.sum,
        count=last.count - first.count,
    )


def _histogram(col: list[Hist | None]) -> dict[str, Any] | None:
    d = _hist_delta(col)
    if d is None:
        return None
    out: dict[str, Any] = {"count": d.count, "mean": d.sum / d.count if d.count else None}
    for q in QUANTILES:
        out[f"p{round(q * 100)}"] = histogram_quantile(q, d.buckets) if d.count else None
    return out


def summarize_series(s: Series, steady: Intervals) -> dict[str, Any]:
    """One URL's figures: each name (common or raw) by its kind."""
    times = s.times_ns
    every = list(range(len(times)))
    steady_idx = _inside(times, steady) if steady else []
    common: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    for name in sorted(set(s.values) | set(s.hists) | set(s.implausible)):
        kind = s.kinds.get(name, "unknown")
        entry: dict[str, Any] = {"kind": kind}
        if name in s.units:
            entry["unit"] = s.units[name]
        if name in s.sources:
            entry["metric"] = s.sources[name]
        if kind == "histogram":
            entry.update(_histogram(s.hists[name]) or {"count": 0})
        elif kind == "counter":
            entry["run"] = _counter_run(s, name)
            entry["steady"] = _counter_steady(s, name, steady) if steady else None
        else:
            entry["run"] = _gauge(s.values[name], every)
            entry["steady"] = _gauge(s.values[name], steady_idx) if steady_idx else None
        if name in s.implausible:
            lo, hi = BOUNDS[name]
            readings = s.implausible[name]
            entry["implausible"] = {
                "readings": len(readings),
                "example": readings[0],
                "bounds": [lo, hi if math.isfinite(hi) else None],
                "note": "readings outside the physical bounds: left out of every figure",
            }
        (common if name in s.common else raw)[name] = entry
    unc = np.asarray(s.uncertainties_ns, dtype=float)
    return {
        "url": s.url,
        "engines": sorted(s.engines),
        "scrapes": len(times),
        "failed": s.failed,
        "errors": s.errors,
        "not_finite_samples": s.not_finite,
        "span_s": (times[-1] - times[0]) / NS_PER_S if len(times) > 1 else None,
        "uncertainty_ms": (
            {"p50": float(np.percentile(unc, 50)) / 1e6, "max": float(unc.max()) / 1e6} if len(unc) else None
        ),
        "common": common,
        "raw": raw,
    }


def summarize(path: Path, steady: Intervals, client: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's server_metrics from the scrapes file (None when there is none). client: the
    client's figures the derived ones are set beside (derived.derived_figures)."""
    if not path.is_file():
        return None
    series = build(read_scrapes(path))
    if not series:
        return None
    sources = [summarize_series(s, steady) for s in series.values()]
    out: dict[str, Any] = {"sources": sources}
    out.update(derived_figures(list(series.values()), sources, steady, client))
    return out


def add_to_summary(summary: dict[str, Any], path: Path, steady: Intervals, output_tokens: int) -> None:
    """The run's summary gains server_metrics (and joules per output token, output tokens per joule
    at its top level, beside the throughputs) when the folder has a scrapes file at `path`: the one
    step of a run's finish and of a rebuilt summary. output_tokens: every request's, warm-up and
    failed ones included (the scrapes bracket them all)."""
    timings = summary.get("server_timings") or {}
    client = {
        "output_tokens": output_tokens,
        "steady_output_throughput_tps": summary.get("steady_output_throughput_tps"),
        "tokens_per_event": summary.get("tokens_per_event"),
        "ttft_minus_prompt_s": timings.get("ttft_minus_prompt_s"),
    }
    server = summarize(path, steady, client)
    if server is None:
        return
    summary["server_metrics"] = server
    summary["joules_per_output_token"] = server.pop("joules_per_output_token")
    summary["output_tokens_per_joule"] = server.pop("output_tokens_per_joule")
