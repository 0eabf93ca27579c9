"""Finding the capacity by search (`pytps sweep --search rate|concurrency`): the highest load whose
run-level targets hold, as a bracket [highest pass, lowest fail] with the deciding target and its
interval at each end (docs/metrics.md, "Capacity search").

A probe is a whole run at one load, bounded in time: it sends for `probe_s` seconds, and never for
less than `min_ttfts` of the server's TTFTs (the largest median TTFT of the start run and of the
passing probes so far), so a probe at a high load is not over before its first answers are back.
It is judged by pytps.sweep.verdict: the error rate first, then saturation (measure.saturation,
which also stops an overloaded probe early), then each target's 95% bootstrap interval against its
limit. A target whose interval straddles its limit leaves the probe undecided: it is run again, up
to `repeats` more times, on the pooled requests, and if still undecided it is reported so: an
undecided load is never counted as passing.

Placement: bracket first (from `start`, doubling until a probe fails), then narrow it until it is
narrower than `precision`. A saturated probe's completion rate is the server's capacity, near
enough, so the next probes go just below and just above it; else the deciding target's values at
the two ends are interpolated to its limit; plain bisection is the fallback, and every placement
is kept a tenth of the bracket from its ends, so each probe narrows it.

The whole search has a time budget (`budget_s`): when the next probe would not fit in it, the
search stops and reports its best bracket so far. At the end the first passing load is run again
(`recheck`): if it disagrees with its earlier result beyond both intervals, the server changed
during the search and the answer is "unstable server", not a capacity.

This module runs nothing itself: `run_probe(mode, load, name, seconds)` is given (pytps.cli.sweep
runs `pytps run`'s machinery), so it is tested with a model of a server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.sweep.verdict import (
    MIN_REQUESTS,
    Probe,
    ProbeRun,
    describe_check,
    describe_disagreement,
    disagreement,
    judge,
)

__all__ = ["CapacitySearch", "capacity_line"]

# The estimate-based probes sit this share of `precision` below and above the estimate.
ESTIMATE_SPAN = 0.4
# No probe closer than this share of the bracket to either end: each one narrows it.
MIN_STEP = 0.1
# The start run (concurrency 1, rate search) sends for at most this long: it only places the first probe.
START_RUN_S = 5.0


@dataclass
class CapacitySearch:
    axis: str  # "rate" or "concurrency" (the verdicts know no axis: pytps.sweep.verdict)
    run_probe: Callable[[str, float, str, float], ProbeRun]  # (mode, load, name, seconds)
    slo_run: dict[str, float]
    max_error_rate: float = 0.01
    precision: float = 0.05
    max_probes: int = 10
    repeats: int = 2
    start: float | None = None
    probe_s: float = 10.0
    budget_s: float = 300.0
    min_ttfts: float = 5.0
    recheck: bool = True
    progress: Callable[[str], None] = lambda line: None
    clock: Callable[[], float] = time.monotonic
    probes: list[Probe] = field(default_factory=list)
    runs_used: int = 0
    low: Probe | None = None  # the highest pass so far
    high: Probe | None = None  # the lowest fail (or undecided: never counted as a pass) so far
    stopped: str | None = None  # why the search ended before narrowing the bracket
    unstable: dict[str, Any] | None = None
    ttft_s: float | None = None  # the server's TTFT, as the start run and passing probes saw it
    _t0: float | None = None
    _overrun_s: float = 0.0  # the most a run took beyond its sending time

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
        if not 0 < self.probe_s < float("inf"):
            raise ConfigError(f"--search-probe-s {self.probe_s}: give a finite number of seconds > 0, e.g. 10")
        if not 0 < self.budget_s < float("inf"):
            raise ConfigError(f"--search-budget-s {self.budget_s}: give a finite number of seconds > 0, e.g. 300")

    # ---- time ----------------------------------------------------------------------------------

    def elapsed_s(self) -> float:
        return 0.0 if self._t0 is None else self.clock() - self._t0

    def probe_seconds(self, load: float | None = None) -> float:
        """A probe's sending time: probe_s, at least min_ttfts of the server's TTFTs, and (a rate
        probe) long enough for the MIN_REQUESTS a pass needs. A low rate's long probe then may not
        fit in the budget: the search stops there rather than judge a handful of requests."""
        seconds = max(self.probe_s, self.min_ttfts * self.ttft_s) if self.ttft_s else self.probe_s
        if self.axis == "rate" and load:
            seconds = max(seconds, 2 * MIN_REQUESTS / load)  # twice: random arrivals bring 20 almost surely
        return seconds

    def _fits(self, load: float | None = None, *, recheck: bool = False) -> bool:
        """Whether the next probe run at `load` (and the recheck after it, when asked) fits in the
        run count and the time budget."""
        if self.runs_used + 1 + recheck > self.max_probes:
            return False
        need = self.probe_seconds(load) + self._overrun_s
        if recheck:
            need += self._recheck_seconds() + self._overrun_s
        return self.elapsed_s() + need <= self.budget_s

    def _fits_recheck(self) -> bool:
        if self.runs_used + 1 > self.max_probes:
            return False
        return self.elapsed_s() + self._recheck_seconds() + self._overrun_s <= self.budget_s

    def _recheck_seconds(self) -> float:
        """The recheck runs as long as the probe it repeats (a comparison at equal settings)."""
        first = next((p for p in self.probes if p.status == "pass" and not p.recheck), None)
        return first.seconds if first is not None and first.seconds else self.probe_seconds()

    def _learn_ttft(self, run: ProbeRun) -> None:
        ttft = run.median_ttft_s()
        if ttft is not None:
            self.ttft_s = max(self.ttft_s or 0.0, ttft)

    # ---- one probe ---------------------------------------------------------------------------

    def _run(self, mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        self.runs_used += 1
        t = self.clock()
        try:
            return self.run_probe(mode, load, name, seconds)
        finally:
            # Sending time is not the whole run: start-up and the requests in flight at its end.
            self._overrun_s = max(self._overrun_s, self.clock() - t - seconds)

    def probe(self, load: float, *, recheck: bool = False) -> Probe:
        # Four significant digits: a load a person can read and retype, far finer than any bracket.
        load = float(f"{load:.4g}")
        runs: list[ProbeRun] = []
        status: str = "undecided"
        checks: list[dict[str, Any]] = []
        deciding: dict[str, Any] | None = None
        seconds = self._recheck_seconds() if recheck else self.probe_seconds(load)
        for attempt in range(1 + self.repeats):
            if attempt and not self._fits(load, recheck=self.recheck and not recheck):
                break
            name = f"{self.axis}={_fmt(load)}" + ("-recheck" if recheck else "")
            name += f"-{attempt + 1}" if attempt else ""
            runs.append(self._run(self.axis, load, name, seconds))
            status, checks, deciding = judge(runs, self.slo_run, self.max_error_rate)
            if status != "undecided":
                break
        if status == "pass" and not recheck:
            for r in runs:
                self._learn_ttft(r)
        rates = [r.completion_rps for r in runs if r.completion_rps]
        p = Probe(load, status, runs, checks, deciding, float(np.mean(rates)) if rates else None, seconds, recheck)
        self.probes.append(p)
        what = "recheck" if recheck else f"probe {len(self.probes)}"
        self.progress(
            f"{what}: {self.axis} {_fmt(load)} for {seconds:.3g} s: {status} ({describe_check(deciding)}) "
            f"[{self.elapsed_s():.0f} s of {self.budget_s:g}]"
        )
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
        run = self._run("concurrency", 1, "start-concurrency=1", min(self.probe_s, START_RUN_S))
        if not run.completion_rps:
            raise ConfigError("the first probe (concurrency 1) finished no request; check the endpoint")
        self._learn_ttft(run)
        self.progress(f"start: one request in flight sustains {run.completion_rps:.3g} req/s")
        return run.completion_rps

    def run(self) -> dict[str, Any]:
        self._t0 = self.clock()
        x = self._start()
        while True:
            if not self._fits(x, recheck=self.recheck):  # a run, and its time, kept for the recheck
                if self.runs_used + 1 + self.recheck > self.max_probes:
                    self.stopped = "max_probes"
                else:
                    self.stopped = "budget"
                break
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
        self._recheck()
        return self.result()

    def _recheck(self) -> None:
        """The first passing load, run again: a server that drifted during the search disagrees with
        itself there, and then no bracket of this search is a capacity."""
        first = next((p for p in self.probes if p.status == "pass"), None)
        if not self.recheck or first is None or not self._fits_recheck():
            return
        again = self.probe(first.load, recheck=True)
        d = disagreement(first, again)
        if d is not None:
            self.unstable = {"load": first.load, **d}
            self.progress(f"the server is unstable: at {_fmt(first.load)} {describe_disagreement(d)}")

    def result(self) -> dict[str, Any]:
        """The answer so far: every probe, and the bracket [highest pass, lowest fail]."""
        low, high = self.low, self.high
        width = (high.load - low.load) / high.load if low and high else None
        return {
            "axis": self.axis,
            "slo_run": self.slo_run,
            "max_error_rate": self.max_error_rate,
            "precision": self.precision,
            "probe_s": self.probe_s,
            "budget_s": self.budget_s,
            "runs": self.runs_used,
            "elapsed_s": self.elapsed_s(),
            "stopped": self.stopped,
            "unstable": self.unstable,
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


def capacity_line(result: dict[str, Any]) -> str:
    """The answer, one line: `capacity: 212–219 req/s (ttft p90 … at 212; fails at 219: …)`, or
    `the server is unstable: …` when a load point run again disagreed with itself."""
    cap = result["capacity"]
    unit = "req/s" if result["axis"] == "rate" else "concurrent requests"
    lo, hi = cap["low"], cap["high"]
    unstable = result.get("unstable")
    if unstable:
        return (
            f"the server is unstable: at {_fmt(unstable['load'])} {unit} {describe_disagreement(unstable)}: "
            "it changed during the search, so no capacity is given"
        )
    stop = {
        "budget": f"; the search budget of {result.get('budget_s', 0):g} s ran out",
        "max_probes": f"; --search-max-probes ran out at {result['runs']} runs",
    }.get(result.get("stopped") or "", "")
    if lo is None and hi is None:
        return f"capacity: unknown: no probe finished{stop}"
    if lo is None:
        return f"capacity: below {_fmt(hi)} {unit}: no probe passed ({describe_check(cap['high_deciding'])}){stop}"
    if hi is None:
        return f"capacity: above {_fmt(lo)} {unit}: no probe failed in {result['runs']} runs{stop}"
    verb = "fails" if cap["high_status"] == "fail" else "undecided"
    note = "" if cap["converged"] else f"; not narrowed to {result['precision']:.0%} in {result['runs']} runs{stop}"
    return (
        f"capacity: {_fmt(lo)}–{_fmt(hi)} {unit} ({describe_check(cap['low_deciding'])} at {_fmt(lo)}; "
        f"{verb} at {_fmt(hi)}: {describe_check(cap['high_deciding'])}{note})"
    )


def _fmt(value: float) -> str:
    return f"{value:.4g}" if value != int(value) else str(int(value))
