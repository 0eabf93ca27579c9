"""Scaling a run past one process (--workers N) and one host (--backend ray): docs/scale.md."""

from pytps.scale.driver import (
    BACKENDS,
    ON_WORKER_FAILURE,
    ScaledRun,
    ScaleOptions,
    auto_workers,
    parse_workers,
    run_scaled,
)

__all__ = ["BACKENDS", "ON_WORKER_FAILURE", "ScaleOptions", "ScaledRun", "auto_workers", "parse_workers", "run_scaled"]
