"""Running a capacity search into a sweep folder (pytps.sweep.search places the probes; this runs
them): `pytps sweep --search` and a matrix file's workload with `search`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytps.runner.config import RunConfig


def search_folder(
    options: dict[str, Any],
    slo_run: dict[str, float],
    out: Path,
    make_config: Callable[[dict[str, Any], Path], RunConfig],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """A capacity search into `out` (options: sweep.matrix.SEARCH_KEYS), each probe the run of
    make_config(its load settings, its folder): sweep.json, also after Ctrl-C."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.measure.saturation import SaturationWatch
    from pytps.results.folder import load_journal
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner
    from pytps.sweep.cells import Cell, Sweep, headline
    from pytps.sweep.search import CapacitySearch, ProbeRun

    axis = options["search"]
    cells: list[Cell] = []

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        # A rate search's first run is at concurrency 1, where arrivals have no shape. A probe is
        # bounded in time, not in requests (the search sets its seconds: docs/metrics.md).
        load_setting: dict[str, Any] = (
            {"concurrency": int(load), "arrival": "poisson", "burstiness": 1.0}
            if mode == "concurrency"
            else {"rate": load}
        )
        load_setting.update(duration=seconds, requests=None)
        cfg = make_config(load_setting, out / "cells" / name)
        cfg.store_as = cfg.store_as and "sweep_cell"  # the results store files a probe as a sweep's cell
        watch = SaturationWatch(mode, rate_rps=load if mode == "rate" else None)
        result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg), saturation=watch).run())
        if result.interrupted:
            raise KeyboardInterrupt
        lines = [j for j in load_journal(result.out_dir) if not j["warmup"]]
        keys = {"ttft_s", "ttfat_s", "tpot_s", "e2e_s", "e2e_500_s"}
        if mode == axis:
            cells.append(Cell({mode: load}, f"cells/{name}", "done", headline(result.summary)))
        return ProbeRun(
            values={k: [j[k] for j in lines if j["ok"] and j.get(k) is not None] for k in keys},
            ok=[bool(j["ok"]) for j in lines],
            saturation=(result.metadata.get("saturation") or {}).get("reason"),
            completion_rps=(result.summary or {}).get("request_throughput_rps"),
            dir=f"cells/{name}",
        )

    search = CapacitySearch(
        axis=axis,
        run_probe=run_probe,
        slo_run=slo_run,
        max_error_rate=options["search_max_error_rate"],
        precision=options["search_precision"],
        max_probes=options["search_max_probes"],
        repeats=options["search_repeats"],
        start=options["search_start"],
        probe_s=options["search_probe_s"],
        budget_s=options["search_budget_s"],
        progress=say,
    )
    sweep = Sweep(axes={axis: [1]}, out=out, run_cell=lambda v, d: {}, cells=cells)
    try:
        search.run()
    except KeyboardInterrupt:
        sweep.stopped = "interrupted"  # the probes measured so far are kept, with what they said
        raise
    finally:
        sweep.axes[axis] = sorted({c.values[axis] for c in cells}) or [1]
        sweep.extra = {"search": search.result()}
        index = sweep.write_index()
    return index
