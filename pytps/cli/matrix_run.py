"""`pytps run -c FILE` and `pytps sweep -c FILE`: every endpoint x workload cell of a matrix file
(pytps.sweep.matrix) into one results folder, indexed by matrix.json."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytps.cli.exit_codes import overall_exit_code, run_exit_code
from pytps.errors import ConfigError

#: matrix.json's layout (docs/results.md); bumped on every change.
MATRIX_SCHEMA_VERSION = 2


def run_matrix(args: argparse.Namespace, kind: str) -> int:
    """kind: "run" (each cell one run; a list-valued key, one run per value) or "sweep" (each cell
    a sweep over its list-valued keys)."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.cli.run_args import cell_summary, explicit_settings, results_dir
    from pytps.cli.search_run import search_folder
    from pytps.measure.slo import parse_slo_run
    from pytps.results.folder import write_json_atomic
    from pytps.runner.config import make_config
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner
    from pytps.sweep.cells import AXES, StopRule, Sweep, headline
    from pytps.sweep.matrix import SEARCH_KEYS, Matrix

    matrix = Matrix(args.config)
    overrides = explicit_settings(args, args.parser_defaults)
    overrides.pop("out", None)
    for axis in AXES:
        if kind == "sweep" and isinstance(overrides.get(axis), str):
            overrides.pop(axis)  # a sweep's list flags are axes, handled with the file's
    base_override = args.base_url
    out = results_dir(args, f"{kind}-matrix")
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
        except ConfigError as exc:
            raise matrix.locate(cell, exc) from None
    index: dict[str, Any] = {
        "schema_version": MATRIX_SCHEMA_VERSION,
        "config": str(matrix.path),
        "kind": kind,
        "cells": [],
    }
    for n, cell in enumerate(cells, start=1):
        print(
            f"pytps {kind} -c: cell {n}/{len(cells)}: {cell.endpoint} x {cell.workload}{_values_label(cell.values)}",
            file=sys.stderr,
            flush=True,
        )
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
            "exit_code": None,  # the cell's exit status (pytps.cli.exit_codes); null when it did not run
        }
        sweep_codes: list[int] = []
        settings = {**cell.settings, **overrides}
        with ExitStack() as stack:
            base_url = base_override or cell.base_url
            if base_url is None:
                from pytps.emulator import Emulator

                emu_settings = {"keep_truth": False, **cell.emulator}
                base_url = stack.enter_context(Emulator(**emu_settings)).base_url
            try:
                if kind == "run":
                    cfg = make_config(base_url, out=out / cell.dir, **settings)
                    result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
                    entry["headline"] = headline(result.summary)
                    if result.interrupted:
                        raise KeyboardInterrupt
                    entry["exit_code"] = run_exit_code(result.summary, result.metadata)
                elif settings.get("search"):
                    options = {k: settings.pop(k, getattr(args, k)) for k in SEARCH_KEYS}
                    # The search places the load and bounds each probe in time (--search-probe-s).
                    placed = ("concurrency", "rate", "duration", "requests")
                    search_settings = {k: v for k, v in settings.items() if k not in placed}

                    def make_probe(
                        load: dict[str, Any],
                        cell_out: Path,
                        fixed: dict[str, Any] = search_settings,
                        url: str = base_url,
                    ) -> Any:
                        return make_config(url, **fixed, **load, out=cell_out)

                    found = search_folder(
                        options,
                        parse_slo_run(settings.get("slo_run")),
                        out / cell.dir,
                        make_probe,
                        lambda line: print(f"  {line}", file=sys.stderr, flush=True),
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

                    def run_cell(
                        values: dict[str, Any],
                        cell_dir: Path,
                        fixed: dict[str, Any] = fixed,
                        base_url: str = base_url,
                        sweep_codes: list[int] = sweep_codes,
                    ) -> dict[str, Any]:
                        return cell_summary(make_config(base_url, **fixed, **values, out=cell_dir), sweep_codes)

                    sweep = Sweep(
                        axes=axes,
                        out=out / cell.dir,
                        run_cell=run_cell,
                        refine=args.refine,
                        slo_target=args.slo_target,
                        stop=StopRule(args.stop_error_rate, args.stop_e2e_factor),
                        progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
                    )
                    entry["analysis"] = sweep.run()["analysis"]
                    entry["exit_code"] = overall_exit_code(sweep_codes)
            except ConfigError as exc:
                raise matrix.locate(cell, exc) from None
            except KeyboardInterrupt:
                entry["status"] = "interrupted"
                index["cells"].append(entry)
                write_json_atomic(out / "matrix.json", index)
                raise
            except Exception as exc:
                entry["status"], entry["error"] = "failed", f"{type(exc).__name__}: {exc}"
        index["cells"].append(entry)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / "matrix.json", index)
    if args.json:
        print(json.dumps(index, indent=2))
    else:
        print_matrix(index)
    print(f"results: {out} (matrix.json indexes the cells)", file=sys.stderr)
    return overall_exit_code([c["exit_code"] for c in index["cells"] if c["exit_code"] is not None])


def _values_label(values: dict[str, Any]) -> str:
    return "".join(f" {k}={v}" for k, v in values.items())


def _fmt(headline: dict[str, Any], key: str, scale: float, fmt: str) -> str:
    v = headline.get(key)
    return "-" if v is None else format(v * scale, fmt)


def print_matrix(index: dict[str, Any]) -> None:
    for c in index["cells"]:
        h = c["headline"] or {}
        name = f"{c['endpoint']} x {c['workload']}{_values_label(c.get('values') or {})}"
        if c["status"] != "done":
            print(f"{name}: {c['status']} {c['error'] or ''}")
        elif index["kind"] == "run":
            print(
                f"{name}: p50 TTFT {_fmt(h, 'ttft_p50_s', 1e3, '.1f')} ms · "
                f"p50 TPOT {_fmt(h, 'tpot_p50_s', 1e3, '.2f')} ms · "
                f"{_fmt(h, 'output_throughput_tps', 1, ',.0f')} tok/s (all users) · goodput "
                f"{_fmt(h, 'goodput_rps', 1, ',.2f')} req/s · errors {_fmt(h, 'error_rate', 100, '.1f')}%"
            )
        else:
            if c.get("capacity"):
                cap = c["capacity"]
                low, high = (f"{v:.4g}" if v is not None else "?" for v in (cap["low"], cap["high"]))
                print(f"{name}: capacity {low}–{high} (the cell's sweep.json has the probes)")
                continue
            for a in c["analysis"] or []:
                best = (a["max_goodput"] or {}).get("value")
                print(
                    f"{name}: knee {_or_none(a['knee'])} · max goodput at {_or_none(best)} · "
                    f"SLO capacity {_or_none(a['slo_capacity'])}"
                )


def _or_none(value: Any) -> str:
    """A sweep's figure that was not found (no knee within the range) says so, not `None`."""
    return "none in this range" if value is None else str(value)
