"""The library entry points: pytps.run(...) and its coroutine pytps.arun(...), the same job as
`pytps run`, returning the RunResult (pytps.app.runs holds them); pytps.rank(...), `pytps rank`'s
(pytps.app.rank), returning the RankResult."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pytps.app.runs import arun, run

if TYPE_CHECKING:
    from pytps.app.rank import RankResult

__all__ = ["arun", "rank", "run"]


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
