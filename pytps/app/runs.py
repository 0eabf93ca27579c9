"""A run as a job: pytps.run() / pytps.arun() for the library, `run_to_folder` for `pytps run`
(a run or a scaled run, Ctrl-C included), `run_cell` for a sweep's or a matrix's cell. Each
builds the run's RunConfig once (make_config); a scaled run builds none here: its driver does."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.app.endpoint import Endpoint
from pytps.errors import ConfigError
from pytps.runner.loop import Progress as Progress  # what a live display implements (the CLI's bar)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytps.app.served import CellHooks
    from pytps.results.output import RunResult
    from pytps.runner.config import RunConfig
    from pytps.scale import ScaleOptions as ScaleOptions


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
    run in this process. The other keyword arguments are the run's settings
    (pytps.settings.table), named like the CLI flags. Runs its own event loop: inside a running
    one (Jupyter, an async test), await arun().
    """
    import asyncio

    from pytps.runner.event_loop import run_coroutine

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigError("pytps.run() was called inside a running event loop: use `await pytps.arun(...)` there")
    endpoint = Endpoint(base_url, emulator or {})
    if workers != 1 or backend != "local":
        from pytps.scale import ScaleOptions, run_scaled

        with ExitStack() as stack:
            # The driver runs the workers' processes (or Ray actors) and its own loop: not a coroutine.
            options = ScaleOptions(workers, backend, ray_address, on_worker_failure)
            return run_scaled(endpoint.open(stack), settings, options, progress)
    return run_coroutine(arun(base_url, progress=progress, emulator=emulator, **settings))


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
        cfg = make_config(Endpoint(base_url, emulator or {}).open(stack), **settings)
        return await Runner(cfg, progress, envelope=envelope_for(cfg)).run()


@dataclass(frozen=True)
class RunOutcome:
    """What `pytps run` reports: the folder whose results.json was written (None: none was), and
    whether the run was interrupted (what finished is saved)."""

    out_dir: Path | None
    interrupted: bool


def run_to_folder(
    endpoint: Endpoint,
    settings: dict[str, Any],
    *,
    progress: Progress | None = None,
    scale: ScaleOptions | None = None,
    say: Callable[[str], None] | None = None,
    between: CellHooks | None = None,
) -> RunOutcome:
    """One run of `settings` (a scaled one with `scale`) into its results folder; a Ctrl-C ends
    it with what finished saved. say(the emulator's URL) when one is started."""
    from pytps.results.files import RESULTS

    with ExitStack() as stack:
        base_url = endpoint.open(stack, say)
        if between is not None:  # --before-cell now, --after-cell when the run is over
            between.start(base_url)
            stack.callback(between.finish)
        out_dir: Path | None
        if scale is not None:
            from pytps.scale import run_scaled

            try:
                # The workers' progress is shown as one, and Ctrl-C ends the run as a whole.
                result = run_scaled(base_url, settings, scale, progress)
                out_dir, interrupted = result.out_dir, result.interrupted
            except KeyboardInterrupt:
                out = settings.get("out")
                out_dir, interrupted = (Path(out) if out is not None else None), True
        else:
            from pytps.calibrate.envelope import envelope_for
            from pytps.runner.config import make_config
            from pytps.runner.event_loop import run_coroutine
            from pytps.runner.loop import Runner

            cfg = make_config(base_url, **settings)
            runner = Runner(cfg, progress, envelope=envelope_for(cfg))
            try:
                result = run_coroutine(runner.run())
                out_dir, interrupted = result.out_dir, result.interrupted
            except KeyboardInterrupt:
                out_dir, interrupted = (cfg.out_dir if runner.finished else None), True
    if out_dir is not None and not (out_dir / RESULTS).exists():
        out_dir = None
    return RunOutcome(out_dir, interrupted)


def run_cell(cfg: RunConfig, codes: list[int] | None = None) -> dict[str, Any]:
    """One cell of a sweep or a matrix: a whole run, judged against this host's trust envelope. A
    Ctrl-C during it ends the sweep (the cells done so far are kept). codes: each cell's exit
    status is appended (pytps.app.exit_codes)."""
    from pytps.app.exit_codes import run_exit_code
    from pytps.calibrate.envelope import envelope_for
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner

    cfg.store_as = cfg.store_as and "sweep_cell"  # the results store files it as a sweep's cell
    result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
    if result.interrupted:
        raise KeyboardInterrupt
    if codes is not None:
        codes.append(run_exit_code(result.summary, result.metadata))
    return result.summary


def results_folder(out: str | Path | None, kind: str) -> Path:
    """out (checked: a directory, or one can be made there), or results/<UTC time>-<kind>/."""
    if out:
        from pytps.runner.config import check_out_dir

        return check_out_dir(Path(out))
    return Path("results") / (datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{kind}")


def scale_options(workers: str, backend: str, ray_address: str | None, on_worker_failure: str) -> ScaleOptions | None:
    """The run's ScaleOptions from the scale-out flags, or None for a run in this process alone."""
    if workers == "1" and backend == "local":
        return None  # the common case decided without importing pytps.scale (start-up cost)
    from pytps.scale import ScaleOptions, parse_workers

    n = parse_workers(workers)
    if n == 1 and backend == "local":
        return None
    return ScaleOptions(workers=n, backend=backend, ray_address=ray_address, on_worker_failure=on_worker_failure)
