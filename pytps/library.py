"""The library entry points: pytps.run(...) and its coroutine pytps.arun(...), the same job as
`pytps run`, returning the RunResult; pytps.rank(...), `pytps rank`'s, returning the RankResult."""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from pytps.runner.finalize import RunResult
from pytps.runner.loop import Progress

if TYPE_CHECKING:
    from pytps.app.rank import RankResult


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
    run in this process. The other keyword arguments are pytps.runner.config.make_config()'s, named
    like the CLI flags. Runs its own event loop: inside a running one (Jupyter, an async test),
    await arun().
    """
    import asyncio

    from pytps.errors import ConfigError
    from pytps.runner.event_loop import run_coroutine

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigError("pytps.run() was called inside a running event loop: use `await pytps.arun(...)` there")
    if workers != 1 or backend != "local":
        from pytps.scale import ScaleOptions, run_scaled

        with ExitStack() as stack:
            # The driver runs the workers' processes (or Ray actors) and its own loop: not a coroutine.
            base_url = _endpoint(stack, base_url, emulator)
            options = ScaleOptions(workers, backend, ray_address, on_worker_failure)
            return run_scaled(base_url, settings, options, progress)
    return run_coroutine(arun(base_url, progress=progress, emulator=emulator, **settings))


def _endpoint(stack: ExitStack, base_url: str | None, emulator: dict[str, Any] | None) -> str:
    """base_url, or the built-in emulator's (started with the `emulator` settings, closed with the stack)."""
    if base_url is not None:
        return base_url
    from pytps.emulator import Emulator

    # The truth is not kept unless asked for: nothing here reads it, and it grows with the run.
    url: str = stack.enter_context(Emulator(**{"keep_truth": False, **(emulator or {})})).base_url
    return url


("pytps.run() was called inside a running event loop: use `await pytps.arun(...)` there")


async def arun(
    base_url: str | None = None,
    *,
    progress: Progress | None = None,
    emulator: dict[str, Any] | None = None,
    **settings: Any,
) -> RunResult:
    """pytps.run() as a coroutine, on the caller's event loop (the same arguments and result), in
    this process: a scaled run (workers, backend) is pytps.run()'s."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.runner.config import make_config
    from pytps.runner.loop import Runner

    with ExitStack() as stack:
        cfg = make_config(_endpoint(stack, base_url, emulator), **settings)
        return await Runner(cfg, progress, envelope=envelope_for(cfg)).run()


def rank(
    endpoints: dict[str, str | dict[str, Any]],
    *,
    out: str | os.PathLike[str],
    objective: str | None = None,
    min_accuracy: float | None = None,
    max_error_rate: float | None = None,
    interleave: str = "auto",
    blocks: int = 8,
    every: float | str | None = None,
    for_: float | str | None = None,
    resume: bool = False,
    resamples: int = 2000,
    store: str | os.PathLike[str] | bool | None = None,
    **settings: Any,
) -> RankResult:
    """`pytps rank` from Python (docs/rank.md): the same workload (settings: make_config()'s, as
    for run()) against every endpoint, interleaved, ranked. endpoints: name -> base URL, or a dict
    with `url` (none: the built-in emulator with the `emulator` settings) and the endpoint's own
    run settings (`model`, `api`, prices, …). every / for_: seconds or "1h"-style durations.
    Returns a RankResult (.data: rank.json; .verdict: the last round's)."""
    from pathlib import Path

    from pytps.app.rank import RankSettings, parse_duration
    from pytps.app.rank import rank as run_rank
    from pytps.app.rank_runs import EndpointSpec

    specs = []
    for name, spec in endpoints.items():
        if isinstance(spec, str):
            specs.append(EndpointSpec(name, spec))
        else:
            own = dict(spec)
            url, emulator = own.pop("url", None), dict(own.pop("emulator", None) or {})
            specs.append(EndpointSpec(name, url, own, emulator))

    def seconds(value: float | str | None, flag: str) -> float | None:
        return parse_duration(value, flag) if isinstance(value, str) else value

    rank_settings = RankSettings(
        objective=objective,
        min_accuracy=min_accuracy,
        max_error_rate=max_error_rate,
        interleave=interleave,
        blocks=blocks,
        every_s=seconds(every, "every"),
        for_s=seconds(for_, "for_"),
        resume=resume,
        resamples=resamples,
        seed=int(settings.get("seed") or 0),
        store=None if store is None or isinstance(store, bool) else os.fspath(store),
        record=store is not False,
    )
    return run_rank(specs, settings, rank_settings, Path(out))
