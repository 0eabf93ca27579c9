"""The library entry point: pytps.run(...), the same job as `pytps run`, returning the result."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from .finalize import RunResult
from .runner import Progress


def run(
    base_url: str | None = None,
    *,
    progress: Progress | None = None,
    emulator: dict[str, Any] | None = None,
    workers: int | str = 1,
    backend: str = "local",
    ray_address: str | None = None,
    on_worker_failure: str = "continue",
    **settings: Any,
) -> RunResult:
    """Benchmark an endpoint and return a RunResult (.summary is the results.json summary).

    Without base_url, starts pytps.Emulator (with the `emulator` settings) and benchmarks it.
    workers, backend, ray_address, on_worker_failure: scale-out (docs/scale.md); the defaults
    run in this process. The other keyword arguments are pytps.config.make_config()'s, named
    like the CLI flags.
    """
    from .config import make_config
    from .event_loop import run_coroutine
    from .runner import Runner

    with ExitStack() as stack:
        if base_url is None:
            from .emulator import Emulator

            # The truth is not kept unless asked for: nothing here reads it, and it grows with the run.
            base_url = stack.enter_context(Emulator(**{"keep_truth": False, **(emulator or {})})).base_url
        if workers != 1 or backend != "local":
            from .scale import ScaleOptions, run_scaled

            options = ScaleOptions(workers, backend, ray_address, on_worker_failure)
            return run_scaled(base_url, settings, options, progress)
        cfg = make_config(base_url, **settings)
        return run_coroutine(Runner(cfg, progress).run())
