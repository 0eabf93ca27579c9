"""One shared schedule dealt across the workers of a scaled run (docs/scale.md): divide() gives
each worker its Share (pytps.runner.share, where the dealing rule is written), which its Runner
sends.
"""

from __future__ import annotations

from pytps.errors import ConfigError
from pytps.runner.schedule import LoadPlan
from pytps.runner.share import Share


def divide(plan: LoadPlan, workers: int, *, first: int = 0, end: int | None = None) -> list[Share]:
    """The run's plan dealt to `workers` workers (ConfigError when a worker would get no slot)."""
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    slots = plan.max_in_flight
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


__all__ = ["Share", "divide"]
