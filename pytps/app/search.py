"""A capacity search as a job (pytps.sweep.search places the probes; this runs them) into a
sweep folder: `pytps sweep --search`, pytps.search() and a matrix file's workload with `search`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.app.endpoint import Endpoint
from pytps.app.runs import results_folder
from pytps.errors import ConfigError
from pytps.sweep.search import capacity_line as capacity_line  # the answer in one line, for the CLI

if TYPE_CHECKING:
    from pytps.app.served import CellHooks
    from pytps.runner.config import RunConfig
    from pytps.sweep.search import CapacitySearch, ProbeRun


@dataclass(frozen=True)
class SearchPlan:
    """A capacity search's settings (the table's `search` ones, less the "search_" prefix): the
    axis it searches ("rate", "concurrency" or "agents"), its first probe's load (None: found), the
    bracket's precision, the probes' budget, the repeats of an undecided probe, the error
    rate a probe fails above, each probe's sending time and the whole search's time budget."""

    axis: str
    start: float | None = None
    precision: float = 0.05
    max_probes: int = 10
    repeats: int = 2
    max_error_rate: float = 0.01
    probe_s: float = 10.0
    budget_s: float = 300.0
    agents: str | None = None  # --search agents: the trajectories (default: the shipped set)

    @classmethod
    def of(cls, settings: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> SearchPlan:
        """From the table's search settings (search, search_start, ...); defaults fill those not given."""
        given = {**(defaults or {}), **{k: v for k, v in settings.items() if v is not None}}
        named = {f.name: given["search_" + f.name] for f in fields(cls) if "search_" + f.name in given}
        return cls(axis=given["search"], **{k: v for k, v in named.items() if k != "axis"})

    def capacity_search(
        self, run_probe: Callable[[str, float, str, float], ProbeRun], slo_run: dict[str, float], *,
        axis: str | None = None, progress: Callable[[str], None],
    ) -> CapacitySearch:  # fmt: skip
        """The search these settings make, each probe run by run_probe(mode, load, name, seconds);
        axis: the load axis probed (default self.axis; the agents search probes concurrency)."""
        from pytps.sweep.search import CapacitySearch

        return CapacitySearch(
            axis=axis or self.axis, run_probe=run_probe, slo_run=slo_run, max_error_rate=self.max_error_rate,
            precision=self.precision, max_probes=self.max_probes, repeats=self.repeats, start=self.start,
            probe_s=self.probe_s, budget_s=self.budget_s, progress=progress,
        )  # fmt: skip


def probe_settings(
    settings: Mapping[str, Any], axis: str, *, start_hint: str = " (or use --search-start)"
) -> dict[str, Any]:
    """The run settings every probe of a search along `axis` shares: all but the load, the length
    and the folder, which the search sets per probe; a load or a length given is refused."""
    for name in ("concurrency", "rate"):
        if settings.get(name) is not None:
            raise ConfigError(f"--search {axis} places the load itself: leave out --{name}{start_hint}")
    for name in ("duration", "requests"):
        if settings.get(name) is not None:
            raise ConfigError(f"--search {axis} bounds each probe in time: leave out --{name} (use --search-probe-s)")
    return {k: v for k, v in settings.items() if k not in ("concurrency", "rate", "duration", "requests", "out")}


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
    if plan.axis == "agents":  # sustained agents: N concurrent agents per probe (pytps.app.agent_search)
        from pytps.app.agent_search import sweep_agents

        return SearchOutcome(*sweep_agents(endpoint, settings, plan, out=out, say=say, say_endpoint=say_endpoint))
    folder = results_folder(out, "sweep")
    with ExitStack() as stack:
        base_url = endpoint.open(stack, say_endpoint)
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
    from pytps.sweep.search import ProbeRun

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
