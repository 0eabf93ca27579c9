"""Which requests a Runner sends: its share of the run's one schedule (docs/scale.md).

The run's request indices are those of one process: 0, 1, 2, ..., and index i is warm-up when
i < warmup. A single process is worker 0 of 1 and sends them all (Share.whole). Worker k of n
(pytps.scale.share.divide) takes the indices first + k + m·n (m = 0, 1, ...) below the run's end:
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

    @classmethod
    def whole(cls, plan: LoadPlan) -> Share:
        """The whole of plan's schedule, for a run in one process (worker 0 of 1)."""
        end = plan.warmup + plan.requests if plan.requests is not None else None
        slots = plan.max_in_flight
        return cls(worker=0, workers=1, first=0, end=end, warmup=plan.warmup, slots=slots)

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
