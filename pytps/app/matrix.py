"""`pytps run -c FILE` and `pytps sweep -c FILE`: every endpoint x workload cell of a matrix file
(pytps.sweep.matrix) into one results folder, indexed by matrix.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytps.app.endpoint import Endpoint
from pytps.app.exit_codes import overall_exit_code, run_exit_code
from pytps.app.runs import results_folder
from pytps.app.search import SearchPlan, search_folder
from pytps.app.sweeps import SweepOutcome, SweepPlan, sweep_folder
from pytps.errors import ConfigError, PytpsError
from pytps.results.files import MATRIX_INDEX

#: matrix.json's layout (docs/results.md); bumped on every change.
MATRIX_SCHEMA_VERSION = 2


#: A finished (or failed) matrix: its folder, matrix.json's index and its exit status.
MatrixOutcome = SweepOutcome


def matrix(
    config: str | Path,
    kind: str = "run",
    *,
    overrides: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    out: str | Path | None = None,
    sweep_plan: SweepPlan | None = None,
    search_defaults: Mapping[str, Any] | None = None,
    say: Callable[[str], None] = lambda line: None,
    serve_settings: Mapping[str, Any] | None = None,
) -> MatrixOutcome:
    """Every endpoint x workload cell of the TOML matrix `config` into one folder (default
    results/<UTC time>-<kind>-matrix/), indexed by matrix.json. kind: "run" (each cell one run; a
    list-valued key, one run per value) or "sweep" (each cell a sweep over its list-valued keys,
    or a capacity search). overrides: run settings that replace the file's in every cell;
    base_url: every cell's endpoint; search_defaults: the search settings a workload leaves out;
    serve_settings: the table's `serve` settings (--serve-ready, …) for endpoints with `serve`."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.measure.slo import parse_slo_run
    from pytps.results.folder import write_json_atomic
    from pytps.runner.config import make_config
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner
    from pytps.sweep.cells import AXES, headline
    from pytps.sweep.matrix import SEARCH_KEYS, Matrix

    matrix = Matrix(config)
    overrides = dict(overrides or {})
    overrides.pop("out", None)
    for axis in AXES:
        if kind == "sweep" and isinstance(overrides.get(axis), str):
            overrides.pop(axis)  # a sweep's list flags are axes, handled with the file's
    base_override = base_url
    out = results_folder(out, f"{kind}-matrix")
    cells = matrix.cells
    if kind == "run":
        # A flag given on the command line replaces the file's list; a list left is one run per value.
        overridden = [replace(c, settings={**c.settings, **overrides}) for c in cells]
        cells = [run for cell in overridden for run in cell.runs()]
    # Every cell is checked before the first runs, so a typo in the last cell costs nothing.
    for cell in cells:
        settings = {**cell.settings, **overrides}
        if kind == "run" and "search" in settings:
            line = cell.where.get("search")
            raise ConfigError(f"{matrix.path}:{line}: workload {cell.workload!r}: search is `pytps sweep -c`'s")
        # An axis's list checks as its first value; other lists (server_metrics' URLs) are settings.
        checked = {
            k: (v[0] if isinstance(v, list) and k in AXES else v) for k, v in settings.items() if k not in SEARCH_KEYS
        }
        if settings.get("search") in ("rate", "concurrency"):
            checked[settings["search"]] = 1  # the search places the load: any one checks the rest
        try:
            make_config(base_override or cell.base_url or "http://127.0.0.1:9", **checked)
            if cell.serve is not None:
                from pytps.serve_process.grid import configurations

                if not isinstance(cell.serve, str) or cell.base_url is not None:
                    raise ConfigError("serve is a command (a string with {port}) used instead of url: give one")
                configurations(cell.serve, [])
        except ConfigError as exc:
            raise matrix.locate(cell, exc) from None
    index: dict[str, Any] = {
        "schema_version": MATRIX_SCHEMA_VERSION,
        "config": str(matrix.path),
        "kind": kind,
        "cells": [],
    }
    for n, cell in enumerate(cells, start=1):
        say(f"cell {n}/{len(cells)}: {cell.endpoint} x {cell.workload}{_values_label(cell.values)}")
        entry: dict[str, Any] = {
            "endpoint": cell.endpoint,
            "workload": cell.workload,
            "values": cell.values,
            "dir": cell.dir,
            "status": "done",
            "error": None,
            "headline": None,
            "analysis": None,
            "capacity": None,
            "exit_code": None,  # the cell's exit status (pytps.app.exit_codes); null when it did not run
        }
        sweep_codes: list[int] = []
        settings = {**cell.settings, **overrides}
        with ExitStack() as stack:
            if base_override is None and cell.serve is not None:
                from pytps.app.served import served_cell

                try:  # a server that fails fails its cell, with its line; the matrix goes on
                    base_url = stack.enter_context(
                        served_cell(cell.serve, out / cell.dir, serve_settings or {}, settings)
                    )
                except PytpsError as exc:
                    entry["status"], entry["error"] = "failed", str(exc)
                    say(f"failed: {exc}")
                    index["cells"].append(entry)
                    write_json_atomic(out / MATRIX_INDEX, index)
                    continue
            else:
                base_url = Endpoint(base_override or cell.base_url, cell.emulator).open(stack)
            try:
                if kind == "run":
                    cfg = make_config(base_url, out=out / cell.dir, **settings)
                    result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
                    entry["headline"] = headline(result.summary)
                    if result.interrupted:
                        raise KeyboardInterrupt
                    entry["exit_code"] = run_exit_code(result.summary, result.metadata)
                elif settings.get("search"):
                    plan = SearchPlan.of({k: settings.pop(k, None) for k in SEARCH_KEYS}, search_defaults)
                    # The search places the load and bounds each probe in time (search_probe_s).
                    placed = ("concurrency", "rate", "duration", "requests")
                    search_settings = {k: v for k, v in settings.items() if k not in placed}

                    def make_probe(
                        load: dict[str, Any],
                        cell_out: Path,
                        fixed: dict[str, Any] = search_settings,
                        url: str = base_url,
                    ) -> Any:
                        return make_config(url, **{**fixed, **load}, out=cell_out)

                    found = search_folder(
                        plan,
                        parse_slo_run(settings.get("slo_run")),
                        out / cell.dir,
                        make_probe,
                        lambda line: say(f"  {line}"),
                    )
                    entry["analysis"], entry["capacity"] = found["analysis"], found["search"]["capacity"]
                else:
                    axes = {k: sorted(set(v)) for k, v in settings.items() if k in AXES and isinstance(v, list)}
                    if not axes:
                        raise ConfigError(
                            f"workload {cell.workload!r} has nothing to sweep: give concurrency, rate "
                            "or a length as a list"
                        )
                    fixed = {k: v for k, v in settings.items() if k not in axes}

                    def make_cell(
                        values: dict[str, Any], cell_dir: Path, fixed: dict[str, Any] = fixed, url: str = base_url
                    ) -> Any:
                        return make_config(url, **fixed, **values, out=cell_dir)

                    index_of = sweep_folder(
                        axes,
                        out / cell.dir,
                        make_cell,
                        sweep_plan or SweepPlan(),
                        lambda line: say(f"  {line}"),
                        sweep_codes,
                    )
                    entry["analysis"] = index_of["analysis"]
                    entry["exit_code"] = overall_exit_code(sweep_codes)
            except ConfigError as exc:
                raise matrix.locate(cell, exc) from None
            except KeyboardInterrupt:
                entry["status"] = "interrupted"
                index["cells"].append(entry)
                write_json_atomic(out / MATRIX_INDEX, index)
                raise
            except Exception as exc:
                entry["status"], entry["error"] = "failed", f"{type(exc).__name__}: {exc}"
        index["cells"].append(entry)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / MATRIX_INDEX, index)
    code = overall_exit_code([c["exit_code"] for c in index["cells"] if c["exit_code"] is not None])
    return MatrixOutcome(out, index, code)


def _values_label(values: dict[str, Any]) -> str:
    return "".join(f" {k}={v}" for k, v in values.items())
