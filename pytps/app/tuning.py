"""Jobs around a launched server (`--serve`, docs/tuning.md): per server configuration a run, a
sweep, or a capacity search, into its folder; with a search, the configurations ranked by their
capacity bracket (pytps.sweep.tuning). pytps.app.served launches and stops the servers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytps.app.exit_codes import NO_SUCCESS, overall_exit_code
from pytps.app.runs import results_folder, run_cell
from pytps.app.search import search_folder
from pytps.app.search_plan import SearchPlan, probe_settings
from pytps.app.serve_plan import ServeOptions
from pytps.app.served import CellHooks, StoreLater, record_with_startup, serve_configurations, store_later
from pytps.app.sweeps import AXIS_SETTINGS, SweepOutcome, SweepPlan, sweep_axes, sweep_folder
from pytps.serve_process.grid import Configuration

PLACEHOLDER_URL = "http://127.0.0.1:9"  # settings are checked before any server starts


#: A finished (or failed) tuning: its folder, tuning.json's index and its exit status.
TuningOutcome = SweepOutcome


def tune(
    opts: ServeOptions,
    settings: dict[str, Any],
    *,
    search: SearchPlan | None = None,
    plan: SweepPlan | None = None,
    out: str | Path | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> TuningOutcome:
    """Per configuration of opts' server grid: a capacity search (`search`) or a sweep of the
    sweepable `settings` into <out>/configs/<name>/, each cell or probe between the hooks."""
    from pytps.measure.slo import parse_slo_run
    from pytps.runner.config import make_config

    folder = results_folder(out, "tuning")
    hooks = CellHooks(opts.before, opts.after, opts.redact, say)
    store: list[StoreLater] = []  # each cell, recorded with its server's start-up once it has stopped
    codes: list[int] = []
    body: Callable[[Configuration, str, Path], dict[str, Any]]
    if search is not None:
        base = probe_settings(settings, search.axis, start_hint="")  # as pytps.app.search.search refuses
        slo_run = parse_slo_run(settings.get("slo_run"))
        make_config(PLACEHOLDER_URL, **base, **{search.axis: 1})

        def search_body(config: Configuration, url: str, cfg_dir: Path) -> dict[str, Any]:
            def make(load: dict[str, Any], cell_out: Path) -> Any:
                hooks.start(url)  # the previous probe's after-hook, then this one's before-hook
                cfg = make_config(url, **{**base, **load}, out=cell_out)
                store_later(cfg, config, cell_out, store, "sweep_cell")
                return cfg

            try:
                index = search_folder(search, slo_run, cfg_dir, make, lambda line: say(f"{config.name}: {line}"))
            finally:
                hooks.finish()
            found = index["search"]
            return {"axis": found["axis"], "capacity": found["capacity"], "runs": found["runs"]}

        body = search_body
    else:
        axes, fixed = sweep_axes(settings)
        base = {k: v for k, v in settings.items() if k not in AXIS_SETTINGS and k != "out"}
        make_config(PLACEHOLDER_URL, **base, **fixed, **{a: v[0] for a, v in axes.items()})

        def sweep_body(config: Configuration, url: str, cfg_dir: Path) -> dict[str, Any]:
            def make(values: dict[str, Any], cell_dir: Path) -> Any:
                hooks.start(url)  # the previous cell's after-hook, then this one's before-hook
                cfg = make_config(url, **base, **fixed, **values, out=cell_dir)
                store_later(cfg, config, cell_dir, store, "sweep_cell")
                return cfg

            try:
                index = sweep_folder(
                    axes, cfg_dir, make, plan or SweepPlan(), lambda x: say(f"{config.name}: {x}"), codes
                )
            finally:
                hooks.finish()
            return {"cells": len(index.get("cells", [])), "stopped": index.get("stopped")}

        body = sweep_body
    index = serve_configurations(opts, folder, body)
    record_with_startup(store, index)
    failed = [e for e in index["configurations"] if e.get("status") != "done"]
    code = NO_SUCCESS if failed and len(failed) == len(index["configurations"]) else overall_exit_code(codes)
    return TuningOutcome(folder, index, code)


def run_served(
    opts: ServeOptions,
    settings: dict[str, Any],
    *,
    say: Callable[[str], None] = lambda line: None,
    show: Callable[[Path], None] = lambda folder: None,
) -> TuningOutcome:
    """`pytps run --serve`: one run per server configuration (into settings' out itself for one,
    else <out>/configs/<name>/); show(its folder) after each."""
    from pytps.runner.config import make_config

    base = {k: v for k, v in settings.items() if k != "out"}
    make_config(PLACEHOLDER_URL, **base)  # every setting checked before a server starts
    folder = results_folder(settings.get("out"), "run")
    hooks = CellHooks(opts.before, opts.after, opts.redact, say)
    store: list[StoreLater] = []
    codes: list[int] = []

    def body(config: Configuration, url: str, run_dir: Path) -> dict[str, Any]:
        hooks.start(url)
        try:
            cfg = make_config(url, **base, out=run_dir)
            store_later(cfg, config, run_dir, store)
            summary = run_cell(cfg, codes)
        finally:
            hooks.finish()
        show(run_dir)
        return {"requests_ok": summary.get("requests_ok") if summary else None}

    index = serve_configurations(opts, folder, body, single=len(opts.configs) == 1)
    record_with_startup(store, index)
    # A configuration that failed is its line; the command fails when all did.
    none_done = all(e.get("status") != "done" for e in index["configurations"])
    code = NO_SUCCESS if none_done else overall_exit_code(codes)
    return TuningOutcome(folder, index, code)
