"""`pytps sweep --serve CMD [--serve-grid …]`: per server configuration a sweep, or with --search
a capacity search, into <out>/configs/<name>/; the configurations ranked by capacity."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytps.cli.run_args import build_config, cell_summary, results_dir
from pytps.cli.serve_args import ServeOptions
from pytps.cli.served import CellHooks, StoreLater, record_with_startup, serve_configurations, store_later
from pytps.errors import ConfigError
from pytps.serve_process.grid import Configuration

PLACEHOLDER_URL = "http://127.0.0.1:9"  # flags are checked before any server starts


def cmd_tuning(
    args: argparse.Namespace, opts: ServeOptions, swept: tuple[dict[str, list[Any]], dict[str, Any]] | None
) -> int:
    """`swept`: the sweep's (axes, fixed settings); None with --search."""
    from pytps.sweep.tuning import ranking_lines

    out = results_dir(args, "tuning")
    say = opts.say
    hooks = CellHooks(opts.before, opts.after, opts.redact, say)
    store: list[StoreLater] = []  # each cell, recorded with its server's start-up once it has stopped
    if args.search:
        from pytps.measure.slo import parse_slo_run
        from pytps.sweep.matrix import SEARCH_KEYS

        for name in ("concurrency", "rate"):
            if getattr(args, name) is not None:
                raise ConfigError(f"--search {args.search} places the load itself: leave out --{name}")
        slo_run = parse_slo_run(args.slo_run)
        build_config(args, PLACEHOLDER_URL, **{args.search: 1})
        options = {k: getattr(args, k) for k in SEARCH_KEYS}

        def body(config: Configuration, url: str, folder: Path) -> dict[str, Any]:
            from pytps.cli.search_run import search_folder

            def make(load: dict[str, Any], cell_out: Path) -> Any:
                hooks.start(url)  # the previous probe's after-hook, then this one's before-hook
                cfg = build_config(args, url, **load, out=cell_out)
                store_later(cfg, config, cell_out, store, "sweep_cell")
                return cfg

            try:
                index = search_folder(options, slo_run, folder, make, lambda line: say(f"{config.name}: {line}"))
            finally:
                hooks.finish()
            search = index["search"]
            return {"axis": search["axis"], "capacity": search["capacity"], "runs": search["runs"]}

    else:
        assert swept is not None
        axes, fixed = swept
        for name in ("concurrency", "rate"):
            setattr(args, name, None)
        build_config(args, PLACEHOLDER_URL, **fixed, **{a: v[0] for a, v in axes.items()})

        def body(config: Configuration, url: str, folder: Path) -> dict[str, Any]:
            from pytps.sweep.cells import StopRule, Sweep

            def run_cell(values: dict[str, Any], cell_dir: Path) -> dict[str, Any]:
                hooks.start(url)
                try:
                    cfg = build_config(args, url, **fixed, **values, out=cell_dir)
                    store_later(cfg, config, cell_dir, store, "sweep_cell")
                    return cell_summary(cfg)
                finally:
                    hooks.finish()

            sweep = Sweep(
                axes=axes,
                out=folder,
                run_cell=run_cell,
                refine=args.refine,
                slo_target=args.slo_target,
                stop=StopRule(args.stop_error_rate, args.stop_e2e_factor),
                progress=lambda line: say(f"{config.name}: {line}"),
            )
            index = sweep.run()
            return {"cells": len(index.get("cells", [])), "stopped": index.get("stopped")}

    index = serve_configurations(opts, out, body)
    record_with_startup(store, index)
    if args.json:
        print(json.dumps(index, indent=2, default=str))
    elif args.search:
        unit = "req/s" if args.search == "rate" else "concurrent requests"
        print("\n".join(ranking_lines(index, unit)))
    print(f"results: {out} (tuning.json indexes the configurations)", file=sys.stderr)
    if args.html is not None:
        from pytps.report.html_tuning import write_tuning_page

        print(f"HTML: {write_tuning_page(out, args.html)}", file=sys.stderr)
    failed = [e for e in index["configurations"] if e.get("status") != "done"]
    return 3 if failed and len(failed) == len(index["configurations"]) else 0
