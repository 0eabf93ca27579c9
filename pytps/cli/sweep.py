"""`pytps sweep`: a full run per cell of one axis or a grid of two, the curve, and what it says."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytps.app.exit_codes import TABLE
from pytps.cli.report import add_html_argument, check_html_available, write_html
from pytps.cli.run_args import emulator_line, endpoint, flag_settings, say
from pytps.settings.table import TABLE as SETTINGS

EXAMPLES = """examples:
  pytps sweep --concurrency 1,2,4,8,16,32,64 --requests 32 --output-tokens 32
  pytps sweep --base-url http://127.0.0.1:8000 --concurrency 1..64 --refine 2 --slo ttft=0.5,tpot=0.05
  pytps sweep --base-url http://127.0.0.1:8000 --rate 1..32 --duration 30 --price-input 0.5 --price-output 1.5
  pytps sweep --concurrency 1,8,32 --input-tokens 128,1024,8192 --requests 64      # a grid of two axes
"""
EXAMPLES += f"\n{TABLE}"  # what the exit status says (pytps.app.exit_codes)


HELP = "run a list or range of concurrencies, rates or lengths, one full run per cell, and find the knee"
DESCRIPTION = (
    "Sweep one axis (or a grid of two) of concurrency, rate, input or output length: each cell "
    "is a full `pytps run` into <out>/cells/<axis>=<value>/, indexed by <out>/sweep.json. Reports the curve "
    "of per-user speed against aggregate throughput, the knee, the most goodput and the SLO capacity "
    "(docs/metrics.md, Sweeps)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_html_argument(p, "the sweep's curve")


def run(args: argparse.Namespace) -> int:
    if args.config:
        from pytps.cli.run import run_matrix_file

        return run_matrix_file(args, "sweep")
    if args.html is not None:
        check_html_available()
    if args.api in ("openai-speech", "openai-transcriptions"):
        return _voice_sweep(args)
    settings = flag_settings(args)
    from pytps.app.serve_plan import plain_hooks, serve_options
    from pytps.app.served import CellHooks

    serve = SETTINGS.from_flags(args, "serve")
    opts = serve_options(serve, settings, base_url=args.base_url)
    if opts is not None:
        return _tune(args, opts, settings)
    between = CellHooks(*plain_hooks(serve, settings), say("sweep"))
    if args.search:
        from pytps.app.search import SearchPlan, capacity_line, search

        plan = SearchPlan.of(SETTINGS.from_flags(args, "search"))
        found = search(
            endpoint(args, settings),
            settings,
            plan,
            out=args.out,
            say=say("sweep"),
            say_endpoint=emulator_line("searching"),
            between=between,
        )
        if args.search == "agents":
            from pytps.app.agent_search import agents_line

            print(json.dumps(found.index, indent=2) if args.json else agents_line(found.index["search"]))
            print(f"results: {found.out_dir} (agents_search.json holds the probes)", file=sys.stderr)
            if args.html is not None:
                write_html(found.out_dir, args.html)
        else:
            _show(args, found.index, found.out_dir, "probes", capacity_line(found.index["search"]))
        return 0
    from pytps.app.sweeps import SweepPlan, sweep

    sweep_plan = SweepPlan.of(SETTINGS.from_flags(args, "sweep"))
    swept = sweep(
        endpoint(args, settings),
        settings,
        plan=sweep_plan,
        out=args.out,
        say=say("sweep"),
        say_endpoint=emulator_line("sweeping"),
        between=between,
    )
    _show(args, swept.index, swept.out_dir, "cells")
    return swept.exit_code


def _voice_sweep(args: argparse.Namespace) -> int:
    """A sweep of a speech or transcription service over concurrency (pytps.app.voice_sweep)."""
    from pytps.app.voice_sweep import voice_sweep
    from pytps.report.voice_sweep import voice_sweep_lines

    index, out_dir = voice_sweep(vars(args), lambda line: print(line, file=sys.stderr))
    print(json.dumps(index, indent=2) if args.json else voice_sweep_lines(index))
    print(f"results: {out_dir} (voice_sweep.json indexes the cells)", file=sys.stderr)
    if args.html is not None:
        from pytps.report.html_voice import write_voice_sweep_html

        print(f"report: {write_voice_sweep_html(index, out_dir, args.html or None)}", file=sys.stderr)
    return 0 if all(c["ok"] == c["requests"] for c in index["cells"]) else 3


def _tune(args: argparse.Namespace, opts: Any, settings: dict[str, Any]) -> int:
    """`pytps sweep --serve CMD [--serve-grid …] [--search …]`: per server configuration a sweep or
    a capacity search; with a search, the configurations ranked (docs/tuning.md)."""
    from pytps.app.search import SearchPlan
    from pytps.app.sweeps import SweepPlan
    from pytps.app.tuning import tune
    from pytps.report.tuning_lines import ranking_lines

    outcome = tune(
        opts,
        settings,
        search=SearchPlan.of(SETTINGS.from_flags(args, "search")) if args.search else None,
        plan=SweepPlan.of(SETTINGS.from_flags(args, "sweep")),
        out=args.out,
        say=opts.say,
    )
    if args.json:
        print(json.dumps(outcome.index, indent=2, default=str))
    elif args.search:
        unit = "req/s" if args.search == "rate" else "concurrent requests"
        print("\n".join(ranking_lines(outcome.index, unit)))
    print(f"results: {outcome.out_dir} (tuning.json indexes the configurations)", file=sys.stderr)
    if args.html is not None:
        from pytps.report.html_tuning import write_tuning_page

        print(f"report: {write_tuning_page(outcome.out_dir, args.html)}", file=sys.stderr)
    return outcome.exit_code


def _show(args: argparse.Namespace, index: dict[str, Any], out_dir: Path, what: str, answer: str | None = None) -> None:
    """The sweep's curve (and a search's answer), or sweep.json with --json; where it is; --html."""
    from pytps.report.sweep_curve import print_curve

    if args.json:
        print(json.dumps(index, indent=2))
    else:
        print_curve(index)
        if answer is not None:
            print(answer)
    print(f"results: {out_dir} (sweep.json indexes the {what})", file=sys.stderr)
    if args.html is not None:
        write_html(out_dir, args.html)
