"""A capacity search as a job (pytps.sweep.search places the probes; this runs them) into a
sweep folder: `pytps sweep --search`, pytps.search() and a matrix file's workload with `search`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.app.endpoint import Endpoint
from pytps.app.runs import results_folder
from pytps.app.search_plan import SearchPlan as SearchPlan
from pytps.app.search_plan import probe_settings
from pytps.sweep.search import capacity_line as capacity_line  # the answer in one line, for the CLI

if TYPE_CHECKING:
    from pytps.app.served import CellHooks
    from pytps.runner.config import RunConfig


@dataclass(frozen=True)
class SearchOutcome:
    """A finished (or interrupted) search: its folder and sweep.json's index (`search`: the answer)."""

    out_dir: Path
    index: dict[str, Any]


def search(
    endpoint: Endpoint,
    settings: dict[str, Any],
    plan: SearchPlan,
    *,
    out: str | Path | None = None,
    say: Callable[[str], None] = lambda line: None,
    say_endpoint: Callable[[str], None] | None = None,
    between: CellHooks | None = None,
) -> SearchOutcome:
    """The highest load of plan.axis whose slo_run targets and error rate hold, probe by probe,
    each a full run of `settings` into `out` (default results/<UTC time>-sweep/); `between`: hooks
    run around each probe (--before-cell, --after-cell)."""
    from pytps.measure.slo import parse_slo_run
    from pytps.runner.config import make_config

    base = probe_settings(settings, plan.axis)
    folder = results_folder(out, "agents" if plan.axis == "agents" else "sweep")
    with ExitStack() as stack:
        base_url = endpoint.open(stack, say_endpoint)
        if plan.axis == "agents":  # sustained agents: N concurrent agents per probe (pytps.app.agent_search)
            from pytps.app.agent_search import sweep_agents

            return SearchOutcome(folder, sweep_agents(base_url, base, settings, plan, folder, say))
        make_config(base_url, **base, **{plan.axis: 1})  # every setting checked first

        def make_probe(load: dict[str, Any], cell_out: Path) -> RunConfig:
            if between is not None:
                between.start(base_url)  # the previous probe's after-hook, then this one's before-hook
            # The probe's load settings override the run's (the start run's arrival, the probe's length).
            return make_config(base_url, **{**base, **load}, out=cell_out)

        try:
            index = search_folder(plan, parse_slo_run(settings.get("slo_run")), folder, make_probe, say)
        finally:
            if between is not None:
                between.finish()
    return SearchOutcome(folder, index)


def search_folder(
    plan: SearchPlan,
    slo_run: dict[str, float],
    out: Path,
    make_config: Callable[[dict[str, Any], Path], RunConfig],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """A capacity search into `out`, each probe the run of make_config(its load settings, its
    folder): sweep.json, also after Ctrl-C."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.measure.saturation import SaturationWatch
    from pytps.results.folder import load_journal
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner
    from pytps.sweep.cells import Cell, Sweep, headline
    from pytps.sweep.verdict import ProbeRun

    axis = plan.axis
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

    search = plan.capacity_search(run_probe, slo_run, progress=say)
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
