"""The library entry points: pytps.run(...) and its coroutine pytps.arun(...), the same job as
`pytps run`, returning the RunResult."""

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
    Runs its own event loop: inside a running one (Jupyter, an async test), await arun().
    """
    import asyncio

    from .errors import ConfigError
    from .event_loop import run_coroutine

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_coroutine(arun(base_url, progress=progress, emulator=emulator, **settings))
    raise ConfigError("pytps.run() was called inside a running event loop: use `await pytps.arun(...)` there")


async def arun(
    base_url: str | None = None,
    *,
    progress: Progress | None = None,
    emulator: dict[str, Any] | None = None,
    **settings: Any,
) -> RunResult:
    """pytps.run() as a coroutine, on the caller's event loop (the same arguments and result)."""
    from .config import make_config
    from .runner import Runner

    with ExitStack() as stack:
        if base_url is None:
            from .emulator import Emulator

            # The truth is not kept unless asked for: nothing here reads it, and it grows with the run.
            base_url = stack.enter_context(Emulator(**{"keep_truth": False, **(emulator or {})})).base_url
        cfg = make_config(base_url, **settings)
        return await Runner(cfg, progress).run()
