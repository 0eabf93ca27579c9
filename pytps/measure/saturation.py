"""Past saturation: whether a run's load is more than the server can serve, from the stamps of the
requests as they finish (docs/metrics.md, "Saturation"). A capacity search (`pytps sweep --search`)
stops a probe early with it, and judges a finished probe with the same rule.

Rate mode (open loop): the requests in flight are the arrivals the schedule made so far (rate x
time) less those finished. Below capacity they hover around rate x latency; past it they grow
without bound, as fast as arrivals outrun completions. The rule fits a line to the in-flight
count sampled once per window and calls the load saturated when the line rises by more than
`min_growth` requests (and more than `growth_share` of the level it started from) over the run,
at a rate of at least `min_deficit` of the arrival rate, and the rise is real (the slope at least
`min_slope_t` standard errors of the fit): completions fall behind arrivals. The
schedule lag (send stamp minus scheduled instant) growing past `max_lag_s` means the client
itself could not keep the schedule, which also ends the probe.

Rate mode, just past capacity, the queue grows too slowly to outgrow a batch server's saw-tooth in
a few seconds; but each request then waits longer than the one before, so the load is also
saturated when the median TTFT rose in each of the last `trend_windows` windows, to at least
`ttft_rise` times the first window's.

Concurrency mode (closed loop): requests in flight are fixed, so a queue shows as latency: the
load is saturated when the median TTFT rose in each of the last `trend_windows` windows, to at
least `ttft_rise` times the first window's, while the completion rate stayed within
`flat_share` (throughput flat: more waiting bought nothing).

A verdict needs `min_windows` windows (3 s by default): a shorter run is never called saturated.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class SaturationRule:
    window_s: float = 0.5
    min_windows: int = 6
    min_growth: float = 4.0  # requests
    growth_share: float = 0.25  # of the in-flight level at the start
    min_deficit: float = 0.005  # of the arrival rate
    min_slope_t: float = 3.0  # the growth's slope, in standard errors of the fit
    max_lag_s: float = 0.25
    trend_windows: int = 4
    ttft_rise: float = 2.0
    flat_share: float = 0.10


@dataclass
class SaturationWatch:
    """Fed each finished request's stamps in the order they finish; says why the load is past
    saturation (a sentence), or None. mode: "rate" (rate_rps given) or "concurrency"."""

    mode: str
    rate_rps: float | None = None
    rule: SaturationRule = field(default_factory=SaturationRule)
    _t0: int | None = None
    _done: int = 0
    _window: int = 0
    _in_flight: list[float] = field(default_factory=list)  # per closed window, at its end
    _lag_s: list[float] = field(default_factory=list)  # per closed window, the largest
    _ttft: list[float] = field(default_factory=list)  # the open window's TTFTs
    _ttft_medians: list[float | None] = field(default_factory=list)  # per closed window
    _completions: list[int] = field(default_factory=lambda: [0])
    _window_lag: float = 0.0
    _verdict: str | None = None  # as of the last closed window: the verdict reads closed ones only

    def observe(self, t_start_ns: int, t_done_ns: int, ttft_s: float | None, lag_s: float | None = None) -> str | None:
        """One finished request: t_start_ns its scheduled (rate mode) or send instant."""
        if self.mode == "rate" and not self.rate_rps:
            return None
        if self._t0 is None:
            self._t0 = t_start_ns  # the first to finish: the schedule's start, near enough
        w = int((t_done_ns - self._t0) / (self.rule.window_s * NS_PER_S))
        if self._window < w:
            while self._window < w:
                self._close()
            self._verdict = self.verdict()
        self._done += 1
        self._completions[-1] += 1
        if ttft_s is not None:
            self._ttft.append(ttft_s)
        if lag_s is not None:
            self._window_lag = max(self._window_lag, lag_s)
        return self._verdict

    def _close(self) -> None:
        self._window += 1
        if self.mode == "rate":
            assert self.rate_rps is not None
            arrivals = 1 + self.rate_rps * self._window * self.rule.window_s
            self._in_flight.append(arrivals - self._done)
        else:
            self._in_flight.append(float(self._done))  # closed loop: the count is only a clock here
        self._lag_s.append(self._window_lag)
        self._window_lag = 0.0
        self._ttft_medians.append(float(np.median(self._ttft)) if self._ttft else None)
        self._ttft = []
        self._completions.append(0)

    def verdict(self) -> str | None:
        """Why the load seen so far is past saturation, or None (also None before min_windows)."""
        r = self.rule
        n = len(self._in_flight)
        if n < r.min_windows:
            return None
        if self.mode == "rate":
            assert self.rate_rps is not None
            lag = self._lag_s
            if lag[-1] > r.max_lag_s and all(b >= a for a, b in itertools.pairwise(lag[-3:])):
                return f"the schedule lag grew to {lag[-1]:.3g} s: the client could not send on schedule"
            y = np.asarray(self._in_flight[1:])  # the first window holds the ramp up
            t = np.arange(1, n) * r.window_s
            slope, intercept = (float(c) for c in np.polyfit(t, y, 1))
            growth = slope * (t[-1] - t[0])
            residual = y - (slope * t + intercept)
            spread = float(np.sqrt(np.sum(residual**2) / max(len(y) - 2, 1)))
            slope_t = slope / (spread / float(np.sqrt(np.sum((t - t.mean()) ** 2)))) if spread > 0 else np.inf
            start = float(np.mean(y[: max(1, len(y) // 3)]))
            if (
                growth > max(r.min_growth, r.growth_share * start)
                and slope > r.min_deficit * self.rate_rps
                and slope_t >= r.min_slope_t
                and y[-1] > start
            ):
                return (
                    f"requests in flight grew by {growth:.0f} over {t[-1] - t[0]:.1f} s ({slope:.1f}/s against "
                    f"{self.rate_rps:g} arrivals/s): completions fall behind arrivals"
                )
            # Just past capacity the queue grows too slowly to outgrow a batch server's saw-tooth in a
            # few seconds, but every request waits longer than the one before: TTFT keeps rising.
            return self._ttft_rising(need_flat=False)
        return self._ttft_rising(need_flat=True)

    def _ttft_rising(self, *, need_flat: bool) -> str | None:
        r = self.rule
        closed = [(m, c) for m, c in zip(self._ttft_medians, self._completions[:-1], strict=True) if m is not None]
        if len(closed) < r.trend_windows + 1:
            return None
        medians = [m for m, _ in closed]
        last = medians[-r.trend_windows - 1 :]
        rates = [c for _, c in closed[-r.trend_windows :]]
        rising = all(b > a for a, b in itertools.pairwise(last))
        flat = max(rates) <= (1 + r.flat_share) * min(rates) if min(rates) > 0 else False
        if rising and (flat or not need_flat) and medians[-1] >= r.ttft_rise * medians[0]:
            return (
                f"median TTFT rose from {medians[0] * 1e3:.3g} to {medians[-1] * 1e3:.3g} ms over the last "
                f"{r.trend_windows} windows"
                + (" while throughput stayed flat" if need_flat else "")
                + ": requests queue in the server"
            )
        return None

    def finish(self) -> str | None:
        """The verdict on the whole run, once it ended (its last, partial window left out)."""
        return self.verdict()
