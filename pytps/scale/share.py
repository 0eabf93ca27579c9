"""One shared schedule dealt across the workers of a scaled run (docs/scale.md).

The run's request indices are those of one process: 0, 1, 2, ..., and index i is warm-up when
i < warmup. Worker k of n takes the indices first + k + m·n (m = 0, 1, ...) below the run's end:
- its first index is its probe, the request it sends alone to fail fast (a single process's
  index 0), so a scaled run sends n probes; with --warmup >= n all of them are warm-up;
- rate mode: the scheduled indices (first + n onwards) follow the run's one arrival schedule,
  index i at offset arrivals[i - first - n] after the run's t0, so each worker sends exactly the
  arrivals dealt to it and together they send the schedule of one process;
- concurrency mode: the slots are divided (worker k gets c // n, plus one when k < c % n), and
  so is a rate-mode --max-concurrency.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from pytps.errors import ConfigError
from pytps.runner.schedule import LoadPlan


@dataclass(frozen=True)
class Share:
    """Worker `worker` of `workers`: which requests it sends, and with how many slots."""

    worker: int
    workers: int
    first: int  # the run's first index dealt (0; after an `auto` pilot, the pilot's end)
    end: int | None  # the run's end index (exclusive), None: until the duration ends
    warmup: int  # indices below this are warm-up (the run's --warmup)
    slots: int | None  # concurrency mode: this worker's slots; rate mode: its --max-concurrency share

    @property
    def probe_index(self) -> int:
        return self.first + self.worker

    def is_warmup(self, index: int) -> bool:
        return index < self.warmup

    def indices(self) -> Iterator[int]:
        """This worker's indices after its probe, in order."""
        start = self.probe_index + self.workers
        stop = self.end
        it = itertools.count(start, self.workers)
        return it if stop is None else itertools.takewhile(lambda i: i < stop, it)

    def scheduled(self, offsets: Iterator[int]) -> Iterator[tuple[int, int]]:
        """Rate mode: (index, offset_ns after t0) of this worker's arrivals, from the run's whole
        schedule `offsets` (arrival j is index first + n + j)."""
        base = self.first + self.workers
        for j, offset in enumerate(offsets):
            index = base + j
            if self.end is not None and index >= self.end:
                return
            if j % self.workers == self.worker:
                yield index, offset


def divide(plan: LoadPlan, workers: int, *, first: int = 0, end: int | None = None) -> list[Share]:
    """The run's plan dealt to `workers` workers (ConfigError when a worker would get no slot)."""
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    slots = plan.concurrency if plan.mode == "concurrency" else plan.max_concurrency
    if slots is not None and slots < workers:
        flag = "--concurrency" if plan.mode == "concurrency" else "--max-concurrency"
        raise ConfigError(
            f"--workers {workers} is more than {flag} {slots}: each worker needs a slot; use --workers {slots} or fewer"
        )
    if end is None and plan.requests is not None:
        end = plan.warmup + plan.requests
    if end is not None and end - first < workers:
        raise ConfigError(
            f"--workers {workers} with {end - first} requests: each worker sends at least its first "
            f"request; give --requests and --warmup adding up to {workers} or more, or fewer workers"
        )
    return [
        Share(
            worker=k,
            workers=workers,
            first=first,
            end=end,
            warmup=plan.warmup,
            slots=None if slots is None else slots // workers + (k < slots % workers),
        )
        for k in range(workers)
    ]
