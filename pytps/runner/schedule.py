"""When to send requests: arrival schedules for rate mode and the load plan that picks a mode.

Two load models, as in serving benchmarks:
- concurrency (closed loop): keep N requests in flight; the next one starts when one finishes.
  Measures a server at a fixed occupancy; the request rate is whatever the server sustains.
- rate (open loop): requests arrive on a schedule of their own (Poisson by default), whether or
  not earlier ones finished. Measures latency under a given offered load, queueing included.

Schedules are absolute: offset i is the sum of the first i gaps, computed in float64 and rounded
to integer nanoseconds once. A runner that sleeps until start + offset[i] therefore never drifts,
however late an individual send is, and lateness can be reported as send time - intended time.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pytps.errors import ConfigError

__all__ = ["ARRIVALS", "LoadPlan", "arrival_offsets_ns", "iter_arrival_offsets_ns"]

ARRIVALS: tuple[str, ...] = ("poisson", "constant", "gamma")
_NS_PER_S = 1e9


def _check_arrival(rate_rps: float, arrival: str, burstiness: float) -> None:
    if arrival not in ARRIVALS:
        raise ConfigError(f"unknown arrival process {arrival!r}: use one of {', '.join(ARRIVALS)}")
    if not _is_number(rate_rps) or not rate_rps > 0:
        raise ConfigError(
            f"request rate must be > 0 requests/s (inf sends all at once), got {rate_rps!r}; "
            "for a fixed number of requests in flight use concurrency instead"
        )
    if not _is_number(burstiness) or not (0 < burstiness < math.inf):
        raise ConfigError(
            f"burstiness must be a finite number > 0, got {burstiness!r}: 1 is Poisson, < 1 burstier, > 1 more even"
        )
    if arrival != "gamma" and burstiness != 1:
        raise ConfigError(
            f"burstiness {burstiness!r} needs arrival 'gamma' (poisson is gamma with burstiness 1, "
            "constant has no randomness)"
        )


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and not math.isnan(x)


def _gap_sampler(
    rng: np.random.Generator, rate_rps: float, arrival: str, burstiness: float
) -> Callable[[int], np.ndarray]:
    """size -> float64 gaps in ns. Numpy's Generator draws these element by element, so drawing
    in chunks gives the same numbers as drawing at once: the lazy and the eager schedule agree."""
    mean_ns = _NS_PER_S / rate_rps
    if arrival == "poisson":
        return lambda size: rng.exponential(mean_ns, size)
    # Gamma with shape k and scale mean/k keeps the mean gap and has CV^2 = 1/k; vLLM's
    # benchmark_serving calls k "burstiness" and so does pytps, so results compare.
    return lambda size: rng.gamma(burstiness, mean_ns / burstiness, size)


def arrival_offsets_ns(
    n: int, rate_rps: float, arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0
) -> np.ndarray:
    """Intended send times of n requests, in ns after the start (int64, offset[0] == 0).

    poisson: exponential gaps with mean 1/rate. constant: offset i is exactly i/rate (computed
    directly, not summed). gamma: gaps ~ Gamma(shape=burstiness, scale=1/(rate*burstiness)).
    rate_rps = inf gives all zeros (everything at once; cap it with a max concurrency).
    Same arguments, same schedule.
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    _check_arrival(rate_rps, arrival, burstiness)
    n = int(n)
    if n == 0 or math.isinf(rate_rps):
        return np.zeros(n, dtype=np.int64)
    if arrival == "constant":
        return np.rint(np.arange(n, dtype=np.float64) * _NS_PER_S / rate_rps).astype(np.int64)
    gaps = _gap_sampler(np.random.default_rng(seed), rate_rps, arrival, burstiness)(n - 1)
    offsets = np.zeros(n, dtype=np.float64)
    np.cumsum(gaps, out=offsets[1:])
    return np.rint(offsets).astype(np.int64)


def iter_arrival_offsets_ns(
    rate_rps: float, arrival: str = "poisson", burstiness: float = 1.0, seed: int = 0, *, chunk: int = 4096
) -> Iterator[int]:
    """The same schedule as arrival_offsets_ns, without end: for runs bounded by duration, where
    the number of requests is not known in advance. The first n values equal
    arrival_offsets_ns(n, ...) exactly, whatever the chunk size."""
    _check_arrival(rate_rps, arrival, burstiness)
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    return _iter_offsets(rate_rps, arrival, burstiness, seed, chunk)


def _iter_offsets(rate_rps: float, arrival: str, burstiness: float, seed: int, chunk: int) -> Iterator[int]:
    if math.isinf(rate_rps):
        yield from itertools.repeat(0)
        return
    if arrival == "constant":
        for i in itertools.count():
            yield int(np.rint(float(i) * _NS_PER_S / rate_rps))
        return
    sample = _gap_sampler(np.random.default_rng(seed), rate_rps, arrival, burstiness)
    yield 0
    total = 0.0
    while True:
        # Start the cumulative sum from the running total so the additions happen in the same
        # order as one cumsum over all gaps: bit-identical to the eager schedule.
        sums = np.cumsum(np.concatenate(([total], sample(chunk))))[1:]
        total = float(sums[-1])
        yield from np.rint(sums).astype(np.int64).tolist()


@dataclass
class LoadPlan:
    """How much load a run offers and when it stops; checked when made (ConfigError).

    concurrency: closed loop with this many requests in flight. rate_rps: open loop at this many
    requests per second, following `arrival` (and `burstiness` for gamma); max_concurrency caps
    the requests in flight in rate mode (arrivals beyond it wait, and that wait shows up as
    lateness). Neither concurrency nor rate: concurrency 1.
    requests / duration_s: stop after this many measured requests / seconds of measurement; with
    both, whichever comes first; with neither, DEFAULT_REQUESTS.
    warmup: requests run before measurement starts, not counted in requests or duration (they
    warm caches and connections, and calibrate a synthetic workload).
    """

    DEFAULT_REQUESTS: ClassVar[int] = 100

    concurrency: int | None = None
    rate_rps: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    max_concurrency: int | None = None
    requests: int | None = None
    duration_s: float | None = None
    warmup: int = 0
    # A trace replay's own schedule (pytps.workload.traces): request i's send offset in ns, non-decreasing.
    # It is rate mode (an open loop on an absolute schedule) without a rate.
    schedule_ns: list[int] | None = field(default=None, repr=False)

    # Set once, when the plan is made (the plan owns them; nothing re-derives them): "rate" when a
    # rate or a trace's schedule is set, else "concurrency"; and the bound on requests in flight,
    # concurrency or max_concurrency (None = unbounded).
    mode: str = field(init=False, repr=False, compare=False)
    max_in_flight: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.mode = "rate" if self.rate_rps is not None or self.schedule_ns is not None else "concurrency"
        self.validate()  # once, where the plan is made
        self.max_in_flight = self.max_concurrency if self.mode == "rate" else (self.concurrency or 1)

    def validate(self) -> LoadPlan:
        """Check the plan and fill in defaults, in place; returns self. Raises ConfigError. Run
        when the plan is made; calling it again changes nothing."""
        if self.concurrency is not None and self.rate_rps is not None:
            raise ConfigError(
                "concurrency and rate are different load models: give one. To cap the requests in flight "
                "while sending at a rate, use max_concurrency (--max-concurrency) with --rate"
            )
        if self.mode == "concurrency":
            if self.max_concurrency is not None:
                raise ConfigError(
                    "max_concurrency (--max-concurrency) caps rate mode; without --rate, "
                    "use concurrency (--concurrency) to set the requests in flight"
                )
            if self.arrival != "poisson" or self.burstiness != 1:
                raise ConfigError(
                    "arrival and burstiness shape rate mode (--rate); in concurrency mode each request "
                    "starts as soon as one finishes"
                )
            if self.concurrency is None:
                self.concurrency = 1
            _check_count("concurrency", self.concurrency, 1)
        else:
            if self.schedule_ns is None:
                _check_arrival(self.rate_rps, self.arrival, self.burstiness)  # type: ignore[arg-type]
            elif self.rate_rps is not None:
                raise ConfigError(
                    "a trace replay sends at the trace's times: leave out --rate (--trace-speedup scales them)"
                )
            if self.max_concurrency is not None:
                _check_count("max_concurrency", self.max_concurrency, 1)
        if self.requests is not None:
            _check_count("requests", self.requests, 1)
        if self.duration_s is not None and (not _is_number(self.duration_s) or not 0 < self.duration_s < math.inf):
            raise ConfigError(f"duration must be a finite number of seconds > 0, got {self.duration_s!r}")
        _check_count("warmup", self.warmup, 0)
        if self.schedule_ns is not None:
            # Every request of the trace (after the warm-up ones), or fewer when asked.
            left = len(self.schedule_ns) - self.warmup
            if left < 1:
                raise ConfigError(f"--warmup {self.warmup} leaves none of the trace's {len(self.schedule_ns)} requests")
            self.requests = left if self.requests is None else min(self.requests, left)
        if self.requests is None and self.duration_s is None:
            self.requests = self.DEFAULT_REQUESTS
        if self.rate_rps is not None and math.isinf(self.rate_rps) and self.requests is None:
            raise ConfigError("an infinite rate sends everything at once: give a request count (--requests) too")
        _check_count("warmup", self.warmup, 0)
        return self

    def arrivals_ns(self, seed: int = 0) -> Iterator[int]:
        """Rate mode: the intended send offsets of the measured requests, endless (stop on
        requests/duration). Concurrency mode has no schedule: ConfigError."""
        if self.mode != "rate":
            raise ConfigError("a concurrency-mode plan has no arrival schedule; requests start as others finish")
        if self.schedule_ns is not None:
            # Request 0 is sent alone first (the runner's probe); the schedule of the others
            # starts after it, at request 1's time.
            rest = self.schedule_ns[1:]
            return iter([t - rest[0] for t in rest] if rest else [])
        return iter_arrival_offsets_ns(self.rate_rps, self.arrival, self.burstiness, seed)  # type: ignore[arg-type]

    def describe(self) -> dict[str, Any]:
        """The plan's fields and mode, for a results file."""
        d = {"mode": self.mode, **dataclasses.asdict(self)}
        d.pop("schedule_ns")  # a trace's: its file and settings are in metadata.workload
        d.pop("max_in_flight")  # concurrency or max_concurrency, both given
        return d


def _check_count(name: str, value: Any, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
