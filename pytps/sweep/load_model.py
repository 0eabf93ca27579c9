"""The emulator's load model in Python, and its capacity as the capacity search defines it
(docs/tuning.md, "The load model's capacity").

`pytps serve --max-batch N` decodes at most N requests at once; later ones wait in a FIFO queue
(csrc/emulator/batch.cpp). Without jitter, prefill or batch slowdown, each request holds its slot
for exactly `ttft + (tokens - 1) x itl` from its admission, and its TTFT is its wait in the queue
plus `ttft`. `LoadModel.serve` replays that on a schedule of arrivals; `probe_verdict` judges the
result with the search's own rules (the saturation watch's replay, then pytps.sweep.verdict.judge);
`slo_capacity` scans rates for the boundary between passing and not passing.

Why not `slots / service time`: that is the rate at which the queue stops being stable (the
saturation rate), not the rate at which a percentile of TTFT meets a limit. Poisson arrivals queue
below it (M/D/c), and a probe of finite length starting empty queues less than a stationary server:
so the search's capacity is a property of the arrival schedule it sends, which this module takes as
given (`arrivals(rate)`: the runner's schedule, pytps.runner.schedule; this room does not import it).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytps.measure.saturation import replay
from pytps.sweep.verdict import ProbeRun, judge

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class LoadModel:
    """`pytps serve --max-batch slots --ttft-ms … --itl-us …` answering `output_tokens` tokens
    (one per event), with no jitter, prefill time or batch slowdown."""

    slots: int
    ttft_ns: int
    itl_ns: int
    output_tokens: int

    @property
    def service_ns(self) -> int:
        """How long a request holds its slot: its last event's due time from its admission."""
        return self.ttft_ns + (self.output_tokens - 1) * self.itl_ns

    @property
    def saturation_rps(self) -> float:
        """slots / service time: above it the queue grows without bound; not an SLO capacity."""
        return self.slots * NS_PER_S / self.service_ns

    def serve(self, arrivals_ns: Sequence[int]) -> list[tuple[int, int, float]]:
        """(arrival, done, ttft_s) per request, arrivals in order: FIFO, a slot freed at t free for an
        arrival at t (the emulator admits it at t either way)."""
        free: list[int] = []  # the times the busy slots free up
        out = []
        for t in arrivals_ns:
            while free and free[0] <= t:
                heapq.heappop(free)
            admitted = t if len(free) < self.slots else heapq.heappop(free)
            heapq.heappush(free, admitted + self.service_ns)
            out.append((int(t), admitted + self.service_ns, (admitted - t + self.ttft_ns) / NS_PER_S))
        return out


def probe_arrivals(arrivals: Callable[[float], Iterable[int]], rate_rps: float, seconds: float) -> list[int]:
    """The measured requests' scheduled offsets of a rate probe: those before its sending time ends
    (the runner stops at the first offset at or past it)."""
    end = int(seconds * NS_PER_S)
    out = []
    for t in arrivals(rate_rps):
        if t >= end:
            break
        out.append(int(t))
    return out


def probe_verdict(
    model: LoadModel,
    arrivals_ns: Sequence[int],
    rate_rps: float,
    slo_run: dict[str, float],
    max_error_rate: float = 0.01,
    runs: int = 1,
) -> tuple[str, dict[str, Any] | None]:
    """(status, deciding check) of a probe of the load model: the saturation watch's replay, then
    the search's verdict on its TTFTs and E2Es (no request fails: the error rate is 0). `runs`: an
    undecided probe run again has the same schedule (the same seed), so its runs are the same, pooled."""
    served = model.serve(arrivals_ns)
    saturation = replay("rate", rate_rps, arrivals_ns, [(a, d, ttft, 0.0) for a, d, ttft in served])
    values = {"ttft_s": [s[2] for s in served], "e2e_s": [(d - a) / NS_PER_S for a, d, _ in served]}
    run = ProbeRun(values=values, ok=[True] * len(served), saturation=saturation, completion_rps=None, dir="")
    status, _, deciding = judge([run] * runs, slo_run, max_error_rate)
    return status, deciding


def capacity_between(
    model: LoadModel,
    arrivals: Callable[[float], Iterable[int]],
    seconds: float,
    slo_run: dict[str, float],
    low_rps: float,
    high_rps: float,
    *,
    resolution: float = 1e-3,
) -> float:
    """A capacity of the load model in [low_rps, high_rps]: a rate whose probe passes while one
    `resolution` (a share of it) above does not, found by bisection. The ends must disagree: the
    load model passes at low_rps and does not pass (fails, or is undecided: never counted as a pass)
    at high_rps, else ValueError. The verdict is not monotone in the rate on one schedule (a sparse
    or dense stretch of arrivals, or the saturation watch's rules, can fail one rate and pass the
    next), so a bracket may hold more than one such rate; bisection finds one of them."""

    def passes(rate: float) -> bool:
        return probe_verdict(model, probe_arrivals(arrivals, rate, seconds), rate, slo_run)[0] == "pass"

    if not passes(low_rps) or passes(high_rps):
        raise ValueError(f"the load model does not pass at {low_rps:.4g} and fail at {high_rps:.4g} req/s")
    while high_rps - low_rps > resolution * high_rps:
        mid = (low_rps + high_rps) / 2
        if passes(mid):
            low_rps = mid
        else:
            high_rps = mid
    return low_rps
