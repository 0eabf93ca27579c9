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
    **settings: Any,
) -> RunResult:
    """Benchmark an endpoint and return a RunResult (.summary is the results.json summary).

    Without base_url, starts pytps.Emulator (with the `emulator` settings) and benchmarks it.
    The other keyword arguments are pytps.config.make_config()'s, named like the CLI flags.
    """
    from .config import make_config
    from .event_loop import run_coroutine
    from .runner import Runner

    with ExitStack() as stack:
        if base_url is None:
            from .emulator import Emulator

            # The truth is not kept unless asked for: nothing here reads it, and it grows with the run.
            base_url = stack.enter_context(Emulator(**{"keep_truth": False, **(emulator or {})})).base_url
        cfg = make_config(base_url, **settings)
        return run_coroutine(Runner(cfg, progress).run())
