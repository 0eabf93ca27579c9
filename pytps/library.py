"""The library entry points, each the same job as a CLI command, through the same function of the
application layer (pytps.app): pytps.run(...) and its coroutine pytps.arun(...) (`pytps run`),
pytps.sweep(...) (`pytps sweep`), pytps.search(...) (`pytps sweep --search`) and pytps.matrix(...)
(`pytps run -c` / `pytps sweep -c`); pytps.rank(...) (`pytps rank`), returning the RankResult;
pytps.compare(...) (`pytps compare`) and pytps.history(...) (`pytps history`). docs/library.md."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.app.runs import arun, run

if TYPE_CHECKING:
    from pytps.app.compare import CompareOutcome
    from pytps.app.history import TrendOutcome
    from pytps.app.matrix import MatrixOutcome
    from pytps.app.rank import RankResult
    from pytps.app.search import SearchOutcome
    from pytps.app.sweeps import SweepOutcome, SweepPlan

__all__ = ["arun", "compare", "history", "matrix", "rank", "run", "search", "sweep"]


def sweep(
    base_url: str | None = None,
    *,
    emulator: dict[str, Any] | None = None,
    out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> SweepOutcome:
    """One full run per cell of the sweep's axes: the run settings among concurrency, rate,
    input_tokens and output_tokens given as lists (concurrency=[1, 4, 16]) or as the CLI writes
    them ("1..64"); the other keyword arguments are pytps.run()'s settings, and the sweep's own
    (refine, slo_target, stop_error_rate, stop_e2e_factor: as `pytps sweep`'s flags). Into `out`
    (default results/<UTC time>-sweep/), indexed by sweep.json; returns .out_dir, .index
    (sweep.json) and .exit_code. progress(line): each cell's line, as the CLI prints them."""
    from pytps.app.endpoint import Endpoint
    from pytps.app.sweeps import sweep as sweep_job

    plan = _sweep_plan(settings)
    return sweep_job(Endpoint(base_url, emulator or {}), settings, plan=plan, out=out, say=progress or _quiet)


def search(
    base_url: str | None = None,
    *,
    axis: str = "rate",
    emulator: dict[str, Any] | None = None,
    out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> SearchOutcome:
    """The capacity search: the highest load of `axis` ("rate" or "concurrency") whose slo_run
    targets (a setting, e.g. slo_run="ttft:p90=0.5") and error rate hold, probe by probe, each a
    full run of `settings` (pytps.run()'s) into `out` (default results/<UTC time>-sweep/).
    Returns .out_dir and .index (sweep.json; .index["search"]["capacity"] is the answer). The
    search's own settings, as `pytps sweep --search-*` less the prefix: start, precision,
    max_probes, repeats, max_error_rate, probe_s, budget_s."""
    from dataclasses import fields

    from pytps.app.endpoint import Endpoint
    from pytps.app.search import SearchPlan
    from pytps.app.search import search as search_job

    own = {f"search_{f.name}": settings.pop(f.name) for f in fields(SearchPlan) if f.name in settings}
    plan = SearchPlan.of({"search": axis, **own})
    return search_job(Endpoint(base_url, emulator or {}), settings, plan, out=out, say=progress or _quiet)


def matrix(
    config: str | Path,
    kind: str = "run",
    *,
    base_url: str | None = None,
    out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> MatrixOutcome:
    """Every endpoint x workload cell of the TOML matrix file `config` (docs/matrix.md): kind "run"
    (each cell a run) or "sweep" (each cell a sweep, with pytps.sweep()'s own settings, or a
    capacity search). `settings` (pytps.run()'s) replace the file's in every cell, base_url every
    cell's endpoint. Into `out` (default results/<UTC time>-<kind>-matrix/), indexed by
    matrix.json; returns .out_dir, .index and .exit_code."""
    from pytps.app.matrix import matrix as matrix_job

    plan = _sweep_plan(settings)
    return matrix_job(
        config, kind, overrides=settings, base_url=base_url, out=out, sweep_plan=plan, say=progress or _quiet
    )


def _sweep_plan(settings: dict[str, Any]) -> SweepPlan:
    """A sweep's own settings, taken out of the run's."""
    from pytps.app.sweeps import SweepPlan

    names = ("refine", "slo_target", "stop_error_rate", "stop_e2e_factor")
    return SweepPlan.of({k: settings.pop(k) for k in names if k in settings})


def _quiet(line: str) -> None:
    """No progress lines (the library's default)."""


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


def compare(
    *runs: str | os.PathLike[str] | list[str | os.PathLike[str]],
    resamples: int = 2000,
    seed: int = 0,
    max_days: float = 7.0,
    html: str | os.PathLike[str] | None = None,
) -> CompareOutcome:
    """`pytps compare` from Python (docs/compare.md): each run a results folder, or a list of
    repeated runs of one setup; the first is the baseline. Returns .result (what `pytps compare
    --json` prints) and .html (the page written when `html` names a file)."""
    from pytps.app.compare import ComparePlan
    from pytps.app.compare import compare as compare_job

    sides = [os.fspath(r) if isinstance(r, (str, os.PathLike)) else [os.fspath(p) for p in r] for r in runs]
    return compare_job(sides, ComparePlan(resamples, seed, max_days), html=None if html is None else os.fspath(html))


def history(
    *,
    store: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    model: str | None = None,
    fingerprint: str | None = None,
    metrics: str | list[str] | None = None,
    baseline: int | None = None,
    limit: int = 10,
    all_kinds: bool = False,
) -> TrendOutcome:
    """`pytps history` from Python (docs/history.md): the results store's runs grouped by endpoint,
    model and workload fingerprint, each metric's trend. Returns .groups, .trends (what `pytps
    history --json` prints) and .where (the store read)."""
    from pytps.app.history import Selection, TrendPlan
    from pytps.app.history import history as history_job

    selection = Selection(None if store is None else os.fspath(store), endpoint, model, fingerprint)
    names = ",".join(metrics) if isinstance(metrics, list) else metrics
    return history_job(selection, TrendPlan(metrics=names, baseline=baseline, limit=limit, all_kinds=all_kinds))
