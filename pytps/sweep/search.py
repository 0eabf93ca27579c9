"""Finding the capacity by search (`pytps sweep --search rate|concurrency`): the highest load whose
run-level targets hold, as a bracket [highest pass, lowest fail] with the deciding target and its
interval at each end (docs/metrics.md, "Capacity search").

A probe is a whole run at one load. It passes when every target holds with confidence: the 95%
bootstrap interval (measure.bootstrap, as `pytps compare`) of each target's statistic lies below
its limit, the error rate's below its limit, and the load was not past saturation
(measure.saturation, which also stops an overloaded probe early). A target whose interval
straddles its limit leaves the probe undecided: it is run again, up to `repeats` more times, on
the pooled requests, and if still undecided it is reported so: an undecided load is never counted
as passing.

Placement: bracket first (from `start`, doubling until a probe fails), then narrow it until it is
narrower than `precision`. A saturated probe's completion rate is the server's capacity, near
enough, so the next probes go just below and just above it; else the deciding target's values at
the two ends are interpolated to its limit; plain bisection is the fallback, and every placement
is kept a tenth of the bracket from its ends, so each probe narrows it.

This module runs nothing itself: `run_probe(mode, load, name)` is given (pytps.cli.sweep runs
`pytps run`'s machinery), so it is tested with a model of a server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.measure.bootstrap import interval95, point
from pytps.measure.slo import REQUEST_METRICS

# The estimate-based probes sit this share of `precision` below and above the estimate.
ESTIMATE_SPAN = 0.4
# No probe closer than this share of the bracket to either end: each one narrows it.
MIN_STEP = 0.1


@dataclass
class ProbeRun:
    """What a probe's run measured: per-request values of the measured requests (ok ones for the
    latency keys, every one for `ok`), whether it was past saturation, and its completion rate."""

    values: dict[str, list[float]]
    ok: list[bool]
    saturation: str | None
    completion_rps: float | None
    dir: str


@dataclass
class Probe:
    load: float
    status: str  # pass, fail, undecided
    runs: list[ProbeRun]
    checks: list[dict[str, Any]]
    deciding: dict[str, Any] | None
    completion_rps: float | None

    def describe(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "status": self.status,
            "runs": len(self.runs),
            "dirs": [r.dir for r in self.runs],
            "checks": self.checks,
            "deciding": self.deciding,
            "completion_rps": self.completion_rps,
            "saturation": next((r.saturation for r in self.runs if r.saturation), None),
        }


def parse_targets(slo_run: dict[str, float]) -> list[tuple[str, str, str, float]]:
    """(target name, journal key, statistic, limit) per `--slo-run` entry."""
    out = []
    for key, limit in slo_run.items():
        name, stat = key.split(":")
        out.append((key, REQUEST_METRICS[name], stat, limit))
    return out


@dataclass
class CapacitySearch:
    axis: str  # "rate" or "concurrency"
    run_probe: Callable[[str, float, str], ProbeRun]
    slo_run: dict[str, float]
    max_error_rate: float = 0.01
    precision: float = 0.05
    max_probes: int = 10
    repeats: int = 2
    start: float | None = None
    progress: Callable[[str], None] = lambda line: None
    probes: list[Probe] = field(default_factory=list)
    runs_used: int = 0
    low: Probe | None = None  # the highest pass so far
    high: Probe | None = None  # the lowest fail (or undecided: never counted as a pass) so far

    def __post_init__(self) -> None:
        if self.axis not in ("rate", "concurrency"):
            raise ConfigError(f"--search {self.axis!r}: search rate or concurrency")
        if not 0 < self.precision < 1:
            raise ConfigError(f"--search-precision {self.precision}: give a share between 0 and 1, e.g. 0.05")
        if self.max_probes < 2:
            raise ConfigError(f"--search-max-probes {self.max_probes}: a bracket needs at least 2 probes")
        if self.repeats < 0:
            raise ConfigError(f"--search-repeats {self.repeats}: give 0 or more")
        if self.start is not None and not self.start > 0:
            raise ConfigError(f"--search-start {self.start}: give a load > 0")

    # ---- one probe ---------------------------------------------------------------------------

    def _run(self, mode: str, load: float, name: str) -> ProbeRun:
        self.runs_used += 1
        return self.run_probe(mode, load, name)

    def judge(self, runs: Sequence[ProbeRun]) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None]:
        """(status, checks, the deciding check) of a probe's runs, pooled."""
        checks: list[dict[str, Any]] = []
        saturated = next((r.saturation for r in runs if r.saturation), None)
        if saturated:
            checks.append({"target": "saturation", "verdict": "fail", "reason": saturated})
        ok = np.asarray([x for r in runs for x in r.ok], dtype=np.float64)
        if ok.size:
            errors = 1.0 - ok
            lo, hi = interval95(errors, "mean")
            verdict = "pass" if hi <= self.max_error_rate else "fail" if lo > self.max_error_rate else "undecided"
            checks.append({"target": "error_rate", "value": float(errors.mean()), "ci95": [lo, hi],
                           "limit": self.max_error_rate, "verdict": verdict})  # fmt: skip
        for target, key, stat, limit in parse_targets(self.slo_run):
            values = [v for r in runs for v in r.values.get(key, [])]
            if not values:
                checks.append({"target": target, "value": None, "ci95": None, "limit": limit, "verdict": "fail",
                               "reason": "no request measured it"})  # fmt: skip
                continue
            value = point([np.asarray(values)], stat)
            lo, hi = interval95(values, stat)
            verdict = "pass" if hi <= limit else "fail" if lo > limit else "undecided"
            checks.append({"target": target, "value": value, "ci95": [lo, hi], "limit": limit, "verdict": verdict})
        failed = [c for c in checks if c["verdict"] == "fail"]
        if failed:
            return "fail", checks, failed[0]
        if any(c["verdict"] == "undecided" for c in checks):
            return "undecided", checks, next(c for c in checks if c["verdict"] == "undecided")
        # Passing: the target nearest its limit decides how much room was left.
        limited = [c for c in checks if c.get("limit") and c.get("value") is not None]
        deciding = max(limited, key=lambda c: c["value"] / c["limit"], default=None)
        return "pass", checks, deciding

    def probe(self, load: float) -> Probe:
        # Four significant digits: a load a person can read and retype, far finer than any bracket.
        load = float(f"{load:.4g}")
        runs: list[ProbeRun] = []
        status: str = "undecided"
        checks: list[dict[str, Any]] = []
        deciding: dict[str, Any] | None = None
        for attempt in range(1 + self.repeats):
            if self.runs_used >= self.max_probes:
                break
            name = f"{self.axis}={_fmt(load)}" + (f"-{attempt + 1}" if attempt else "")
            runs.append(self._run(self.axis, load, name))
            status, checks, deciding = self.judge(runs)
            if status != "undecided":
                break
        rates = [r.completion_rps for r in runs if r.completion_rps]
        p = Probe(load, status, runs, checks, deciding, float(np.mean(rates)) if rates else None)
        self.probes.append(p)
        self.progress(f"probe {len(self.probes)}: {self.axis} {_fmt(load)}: {status} ({describe_check(deciding)})")
        return p

    # ---- the search --------------------------------------------------------------------------

    def _narrow_enough(self, lo: float, hi: float) -> bool:
        if self.axis == "concurrency" and hi - lo <= 1:
            return True
        return (hi - lo) / hi <= self.precision

    def _place(self, lo: float, hi: float, low: Probe, high: Probe) -> float:
        tried = {p.load for p in self.probes}
        # Just below and just above a saturated probe's completion rate: informed, so they may sit
        # close to an end; each is tried once.
        if self.axis == "rate" and high.completion_rps and high.deciding and high.deciding["target"] == "saturation":
            est = high.completion_rps
            for x in (est * (1 - ESTIMATE_SPAN * self.precision), est * (1 + ESTIMATE_SPAN * self.precision)):
                if lo * 1.001 < x < hi * 0.999 and x not in tried:
                    return x
        # Else interpolation or the middle, kept a tenth of the bracket from its ends.
        margin = MIN_STEP * (hi - lo)
        interp = _interpolate(low, high)
        for x in [interp, (lo + hi) / 2] if interp is not None else [(lo + hi) / 2]:
            x = min(max(x, lo + margin), hi - margin)
            if self.axis == "concurrency":
                x = float(round(x))
                if not lo < x < hi:
                    continue
            if x not in tried:
                return x
        return float(round((lo + hi) / 2)) if self.axis == "concurrency" else (lo + hi) / 2

    def _start(self) -> float:
        if self.start is not None:
            return self.start
        if self.axis == "concurrency":
            return 1.0
        # What one request in flight sustains: a short run at concurrency 1.
        run = self._run("concurrency", 1, "start-concurrency=1")
        if not run.completion_rps:
            raise ConfigError("the first probe (concurrency 1) finished no request; check the endpoint")
        self.progress(f"start: one request in flight sustains {run.completion_rps:.3g} req/s")
        return run.completion_rps

    def run(self) -> dict[str, Any]:
        x = self._start()
        while self.runs_used < self.max_probes:
            p = self.probe(x)
            if p.status == "pass":
                if self.low is None or p.load > self.low.load:
                    self.low = p
            elif self.high is None or p.load < self.high.load:
                self.high = p
            low, high = self.low, self.high
            if high is None:
                x = x * 2
                continue
            if low is None:
                est = high.completion_rps if high.deciding and high.deciding["target"] == "saturation" else None
                x = est * (1 - ESTIMATE_SPAN * self.precision) if est and est < x else x / 2
                if self.axis == "concurrency":
                    x = float(int(x))
                    if x < 1:
                        break
                continue
            if self._narrow_enough(low.load, high.load):
                break
            x = self._place(low.load, high.load, low, high)
        return self.result()

    def result(self) -> dict[str, Any]:
        """The answer so far: every probe, and the bracket [highest pass, lowest fail]."""
        low, high = self.low, self.high
        width = (high.load - low.load) / high.load if low and high else None
        return {
            "axis": self.axis,
            "slo_run": self.slo_run,
            "max_error_rate": self.max_error_rate,
            "precision": self.precision,
            "runs": self.runs_used,
            "probes": [p.describe() for p in self.probes],
            "capacity": {
                "low": low.load if low else None,
                "high": high.load if high else None,
                "width": width,
                "converged": bool(low and high and self._narrow_enough(low.load, high.load)),
                "low_deciding": low.deciding if low else None,
                "high_deciding": high.deciding if high else None,
                "high_status": high.status if high else None,
            },
        }


def _interpolate(low: Probe, high: Probe) -> float | None:
    """The load where the deciding target of the failing end would meet its limit, on the line
    through its values at the two ends."""
    d = high.deciding
    if not d or d.get("value") is None or d["target"] in ("saturation",):
        return None
    at_low = next((c for c in low.checks if c["target"] == d["target"] and c.get("value") is not None), None)
    if at_low is None or d["value"] == at_low["value"]:
        return None
    share = (d["limit"] - at_low["value"]) / (d["value"] - at_low["value"])
    return float(low.load + share * (high.load - low.load))


def describe_check(c: dict[str, Any] | None) -> str:
    if c is None:
        return "no target"
    if c["target"] == "saturation":
        return f"past saturation: {c['reason']}"
    if c.get("value") is None:
        return f"{c['target']}: {c.get('reason', 'not measured')}"
    if c["target"] == "error_rate":
        lo, hi = c["ci95"]
        return f"error rate {c['value']:.1%} [{lo:.1%}, {hi:.1%}] against {c['limit']:.1%}"
    lo, hi = c["ci95"]
    return (
        f"{c['target'].replace(':', ' ')} {c['value'] * 1e3:.3g} ms [{lo * 1e3:.3g}, {hi * 1e3:.3g}] "
        f"against {c['limit'] * 1e3:.3g} ms"
    )


def capacity_line(result: dict[str, Any]) -> str:
    """The answer, one line: `capacity: 212–219 req/s (ttft p90 … at 212; fails at 219: …)`."""
    cap = result["capacity"]
    unit = "req/s" if result["axis"] == "rate" else "concurrent requests"
    lo, hi = cap["low"], cap["high"]
    if lo is None:
        return f"capacity: below {_fmt(hi)} {unit}: no probe passed ({describe_check(cap['high_deciding'])})"
    if hi is None:
        return f"capacity: above {_fmt(lo)} {unit}: no probe failed in {result['runs']} runs"
    verb = "fails" if cap["high_status"] == "fail" else "undecided"
    note = "" if cap["converged"] else f"; not narrowed to {result['precision']:.0%} in {result['runs']} runs"
    return (
        f"capacity: {_fmt(lo)}–{_fmt(hi)} {unit} ({describe_check(cap['low_deciding'])} at {_fmt(lo)}; "
        f"{verb} at {_fmt(hi)}: {describe_check(cap['high_deciding'])}{note})"
    )


def _fmt(value: float) -> str:
    return f"{value:.4g}" if value != int(value) else str(int(value))
