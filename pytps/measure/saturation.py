"""Past saturation: whether a run's load is more than the server can serve, from the schedule's
arrivals and the stamps of the requests as they finish (docs/metrics.md, "Saturation"). A capacity
search (`pytps sweep --search`) stops a probe early with it, and judges a finished probe with the
same rule.

Rate mode (open loop): the requests in flight at the end of each window are the arrivals the
schedule really made by then (`arrived`, one call per scheduled request) less the requests finished
by then. Never the nominal `rate x time`: a Poisson or gamma schedule runs sparse and dense for
seconds at a time, and a sparse stretch read against the nominal rate looks like growth. Below
capacity the count hovers around rate x latency; past it, it grows without bound. The rule fits a
line to the counts and calls the load saturated when the rise is large (more than `min_growth`
requests and `growth_share` of the starting level, at `min_deficit` of the arrival rate) and
significant: the slope's one-sided Student-t p-value below `growth_p`. The schedule lag (send
stamp minus scheduled instant) growing past `max_lag_s` means the client itself could not keep the
schedule, which also ends the probe.

Just past capacity the queue grows too slowly to outgrow a batch server's saw-tooth in a few
seconds; but each request then waits longer than the one before, so the load is also saturated when
the windows' median TTFTs trend up: a Mann-Kendall test (Kendall's tau against window order) with
one-sided p below `trend_p`, and the median of the last quarter of the windows' medians at least
`ttft_rise` times the first quarter's. One window's noise is no trend.

Concurrency mode (closed loop): requests in flight are fixed, so a queue shows as latency: the
same TTFT trend, while the completions per window over the last `trend_windows` windows stayed
within `flat_share` (throughput flat: more waiting bought nothing).

A verdict needs `min_windows` windows (4 s by default): a shorter run is never called saturated,
and a few early windows cannot pass for a trend (every test runs again at each window).
`replay` runs the rule over a finished schedule (tests, and the capacity search's own checks).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

NS_PER_S = 1_000_000_000
#: How the lag verdict begins: the client, not the server, fell behind (pytps.sweep.verdict tells it apart).
CLIENT_LAG = "the schedule lag grew"


@dataclass(frozen=True)
class SaturationRule:
    window_s: float = 0.5
    min_windows: int = 8
    min_growth: float = 4.0  # requests
    growth_share: float = 0.25  # of the in-flight level at the start
    min_deficit: float = 0.005  # of the arrival rate
    growth_p: float = 1e-4  # the growth's slope: one-sided Student-t p-value below this
    max_lag_s: float = 0.25
    trend_p: float = 1e-4  # window medians of TTFT in order: one-sided Mann-Kendall p-value below this
    ttft_rise: float = 2.0
    trend_windows: int = 4  # concurrency mode: windows whose completions must be flat
    flat_share: float = 0.10


@dataclass
class SaturationWatch:
    """Fed each scheduled arrival (`arrived`, rate mode) and each finished request's stamps in the
    order they finish (`observe`); says why the load is past saturation (a sentence), or None.
    mode: "rate" (rate_rps given, for the wording and the deficit) or "concurrency"."""

    mode: str
    rate_rps: float | None = None
    rule: SaturationRule = field(default_factory=SaturationRule)
    _t0: int | None = None
    _arrivals: list[int] = field(default_factory=list)  # scheduled instants, non-decreasing
    _done: int = 0
    _window: int = 0
    _in_flight: list[float] = field(default_factory=list)  # per closed window, at its end
    _lag_s: list[float] = field(default_factory=list)  # per closed window, the largest
    _ttft: list[float] = field(default_factory=list)  # the open window's TTFTs
    _ttft_medians: list[float | None] = field(default_factory=list)  # per closed window
    _completions: list[int] = field(default_factory=lambda: [0])
    _window_lag: float = 0.0
    _verdict: str | None = None  # as of the last closed window: the verdict reads closed ones only

    def arrived(self, t_sched_ns: int) -> None:
        """One request the schedule made (measured ones only), at its scheduled instant."""
        if self._arrivals and t_sched_ns < self._arrivals[-1]:
            bisect.insort(self._arrivals, t_sched_ns)  # the schedule is in order; this keeps it so anyway
        else:
            self._arrivals.append(t_sched_ns)
        if self._t0 is None:
            self._t0 = t_sched_ns

    def observe(self, t_start_ns: int, t_done_ns: int, ttft_s: float | None, lag_s: float | None = None) -> str | None:
        """One finished request: t_start_ns its scheduled (rate mode) or send instant."""
        if self._t0 is None:
            self._t0 = t_start_ns  # no arrival told (concurrency mode): the first to finish starts the clock
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
        assert self._t0 is not None
        self._window += 1
        if self.mode == "rate":
            end = self._t0 + int(self._window * self.rule.window_s * NS_PER_S)
            self._in_flight.append(float(bisect.bisect_right(self._arrivals, end) - self._done))
        else:
            self._in_flight.append(float(self._done))  # closed loop: the count is only a clock here
        self._lag_s.append(self._window_lag)
        self._window_lag = 0.0
        self._ttft_medians.append(float(np.median(self._ttft)) if len(self._ttft) >= 3 else None)
        self._ttft = []
        self._completions.append(0)

    def in_flight(self) -> list[float]:
        """Requests in flight at the end of each closed window (rate mode)."""
        return list(self._in_flight)

    def verdict(self) -> str | None:
        """Why the load seen so far is past saturation, or None (also None before min_windows)."""
        r = self.rule
        n = len(self._in_flight)
        if n < r.min_windows:
            return None
        if self.mode == "rate":
            # The server's rules first: a server that stops taking connections also makes the
            # client's sends late, and that is the server's saturation, not the client's limit.
            if self._arrivals:
                why = self._growth()
                if why:
                    return why
            # Just past capacity the queue grows too slowly to outgrow a batch server's saw-tooth in a
            # few seconds, but every request waits longer than the one before: TTFT keeps rising.
            why = self._ttft_rising(need_flat=False)
            if why:
                return why
            lag = self._lag_s
            if lag[-1] > r.max_lag_s and all(b >= a for a, b in itertools.pairwise(lag[-3:])):
                return f"{CLIENT_LAG} to {lag[-1]:.3g} s: the client could not send on schedule"
            return None
        return self._ttft_rising(need_flat=True)

    def _growth(self) -> str | None:
        from scipy import stats

        r = self.rule
        y = np.asarray(self._in_flight[1:])  # the first window holds the ramp up
        t = np.arange(1, len(self._in_flight)) * r.window_s
        if float(np.ptp(y)) == 0:
            return None
        fit = stats.linregress(t, y, alternative="greater")
        slope = float(fit.slope)
        growth = slope * (t[-1] - t[0])
        start = float(np.mean(y[: max(1, len(y) // 3)]))
        rate = self.rate_rps or len(self._arrivals) / max(t[-1], r.window_s)
        if (
            float(fit.pvalue) < r.growth_p
            and growth > max(r.min_growth, r.growth_share * start)
            and slope > r.min_deficit * rate
            and y[-1] > start
        ):
            return (
                f"requests in flight grew by {growth:.0f} over {t[-1] - t[0]:.1f} s ({slope:.1f}/s against "
                f"{rate:.3g} arrivals/s, p={float(fit.pvalue):.1g}): completions fall behind arrivals"
            )
        return None

    def _ttft_rising(self, *, need_flat: bool) -> str | None:
        from scipy import stats

        r = self.rule
        # Window medians, not single requests: within a window, requests that queued together wait
        # alike, so single TTFTs are not independent and their trend test would see queue noise
        # as a trend. Windows of 0.5 s are long next to a stable queue's episodes.
        medians = np.asarray([m for m in self._ttft_medians if m is not None])
        n = len(medians)
        if n < r.min_windows:
            return None
        quarter = max(2, n // 4)
        first, last = float(np.median(medians[:quarter])), float(np.median(medians[-quarter:]))
        if not last >= r.ttft_rise * first or float(np.ptp(medians)) == 0:
            return None
        # Mann-Kendall: Kendall's tau of the medians against their order, exact for few windows
        # (so a short run of windows cannot reach trend_p by chance: 8 in order give p = 1/8!).
        tau, p = stats.kendalltau(np.arange(n), medians, alternative="greater")
        if not float(p) < r.trend_p:
            return None
        if need_flat:
            rates = self._completions[:-1][-r.trend_windows :]
            if len(rates) < r.trend_windows or min(rates) <= 0 or max(rates) > (1 + r.flat_share) * min(rates):
                return None
        return (
            f"TTFT rose window after window (Kendall's tau {float(tau):.2f} over {n} windows, p={float(p):.1g}): "
            f"median {first * 1e3:.3g} ms at first, {last * 1e3:.3g} ms at last"
            + (" while throughput stayed flat" if need_flat else "")
            + ": requests queue in the server"
        )

    def finish(self) -> str | None:
        """The verdict on the whole run, once it ended (its last, partial window left out)."""
        return self.verdict()


def replay(
    mode: str,
    rate_rps: float | None,
    arrivals_ns: Iterable[int],
    finished: Sequence[tuple[int, int, float | None, float | None]],
    rule: SaturationRule | None = None,
) -> str | None:
    """The watch's verdict on a whole schedule: `arrivals_ns` every scheduled instant, `finished`
    (start, done, ttft_s, lag_s) per finished request. The first verdict that fired, as a probe
    would have stopped on it, else the verdict at the end."""
    watch = SaturationWatch(mode, rate_rps, rule or SaturationRule())
    for t in sorted(arrivals_ns):
        watch.arrived(t)
    for start, done, ttft, lag in sorted(finished, key=lambda f: f[1]):
        why = watch.observe(start, done, ttft, lag)
        if why:
            return why
    return watch.finish()
