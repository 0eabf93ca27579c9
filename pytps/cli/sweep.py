"""`pytps sweep`: a full run per cell of one axis or a grid of two, the curve, and what it says."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.cli.exit_codes import TABLE, overall_exit_code
from pytps.cli.report import add_html_argument, check_html_available, write_html
from pytps.cli.run_args import add_run_arguments, build_config, cell_summary, endpoint_url, results_dir
from pytps.errors import ConfigError

if TYPE_CHECKING:
    pass

EXAMPLES = """examples:
  pytps sweep --concurrency 1,2,4,8,16,32,64 --requests 32 --output-tokens 32
  pytps sweep --base-url http://127.0.0.1:8000 --concurrency 1..64 --refine 2 --slo ttft=0.5,tpot=0.05
  pytps sweep --base-url http://127.0.0.1:8000 --rate 1..32 --duration 30 --price-input 0.5 --price-output 1.5
  pytps sweep --concurrency 1,8,32 --input-tokens 128,1024,8192 --requests 64      # a grid of two axes
"""
EXAMPLES += f"\n{TABLE}"  # what the exit status says (pytps.cli.exit_codes)


HELP = "run a list or range of concurrencies, rates or lengths, one full run per cell, and find the knee"
DESCRIPTION = (
    "Sweep one axis (or a grid of two) of concurrency, rate, input or output length: each cell "
    "is a full `pytps run` into <out>/cells/<axis>=<value>/, indexed by <out>/sweep.json. Reports the curve "
    "of per-user speed against aggregate throughput, the knee, the most goodput and the SLO capacity "
    "(docs/metrics.md, Sweeps)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p, sweep=True)
    sw = p.add_argument_group("sweep")
    sw.add_argument(
        "--refine",
        type=int,
        default=0,
        metavar="N",
        help="add cells halfway between the knee and its neighbours, up to N rounds (default 0)",
    )
    sw.add_argument(
        "--slo-target",
        type=float,
        default=0.95,
        metavar="F",
        help="share of useful requests a cell needs to count toward the SLO capacity (default 0.95)",
    )
    sw.add_argument(
        "--stop-error-rate",
        type=float,
        default=0.5,
        metavar="F",
        help="stop the sweep after a cell with a higher error rate (default 0.5)",
    )
    sw.add_argument(
        "--stop-e2e-factor",
        type=float,
        default=20.0,
        metavar="X",
        help="stop the sweep after a cell whose median E2E is X times the first cell's (default 20)",
    )
    se = p.add_argument_group("capacity search (docs/metrics.md, Capacity search)")
    se.add_argument(
        "--search",
        choices=("rate", "concurrency"),
        help="find the highest load whose --slo-run targets and error rate hold, by bracketing and "
        "narrowing, instead of running a grid",
    )
    se.add_argument(
        "--search-start",
        type=float,
        metavar="LOAD",
        help="the first probe's load (default: rate, what one request in flight sustains, from a short "
        "run at concurrency 1; concurrency, 1)",
    )
    se.add_argument(
        "--search-precision",
        type=float,
        default=0.05,
        metavar="F",
        help="stop when the bracket is narrower than this share of the load (default 0.05)",
    )
    se.add_argument("--search-max-probes", type=int, default=10, metavar="N", help="at most N runs in all (default 10)")
    se.add_argument(
        "--search-repeats",
        type=int,
        default=2,
        metavar="N",
        help="run an undecided probe (an interval straddling a limit) up to N more times (default 2)",
    )
    se.add_argument(
        "--search-max-error-rate",
        type=float,
        default=0.01,
        metavar="F",
        help="a probe fails above this error rate (default 0.01)",
    )
    # ---- issue 40: the search bounded in time (port into the settings table) ----
    se.add_argument(
        "--search-probe-s",
        type=float,
        default=10.0,
        metavar="S",
        help="each probe sends for S seconds, and at least 5 of the server's TTFTs (default 10); "
        "--duration and --requests do not apply to probes",
    )
    se.add_argument(
        "--search-budget-s",
        type=float,
        default=300.0,
        metavar="S",
        help="the whole search's time budget: when the next probe would not fit, it stops and reports "
        "its best bracket so far (default 300)",
    )
    add_html_argument(p, "the sweep's curve")
    p.set_defaults(func=cmd_sweep)


def sweep_axes(args: argparse.Namespace) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """(the axes swept, the settings every cell shares) from the four sweepable flags."""
    from pytps.sweep.cells import parse_axis

    axes: dict[str, list[Any]] = {}
    fixed: dict[str, Any] = {}
    for name in ("concurrency", "rate", "input_tokens", "output_tokens"):
        text = getattr(args, name)
        if text is None:
            continue
        try:
            values = parse_axis(name, str(text))
        except ConfigError:
            if name in ("input_tokens", "output_tokens"):
                fixed[name] = text  # a single length or distribution (512:64, 128-1024) for every cell
                continue
            raise
        if len(values) > 1 or name in ("concurrency", "rate"):
            axes[name] = values
        else:
            fixed[name] = values[0]
    if not axes:
        raise ConfigError(
            "nothing to sweep: give --concurrency or --rate (or a length) as a list, e.g. "
            "--concurrency 1,2,4,8 or --concurrency 1..64"
        )
    return axes, fixed


def cmd_sweep(args: argparse.Namespace) -> int:
    from pytps.report.sweep_curve import print_curve
    from pytps.sweep.cells import StopRule, Sweep

    if args.config:
        from pytps.cli.matrix_run import run_matrix

        if args.html is not None:
            raise ConfigError("--html draws one sweep: with -c FILE, use pytps report CELL_DIR --html on a cell")
        return run_matrix(args, "sweep")
    if args.html is not None:
        check_html_available()
    if args.search:
        return cmd_search(args)
    axes, fixed = sweep_axes(args)
    for name in ("concurrency", "rate"):
        setattr(args, name, None)  # set per cell
    out = results_dir(args, "sweep")
    with ExitStack() as stack:
        base_url = endpoint_url(args, stack, "sweeping")
        build_config(args, base_url, **fixed, **{a: v[0] for a, v in axes.items()})  # every flag checked first

        codes: list[int] = []  # each cell's exit status (pytps.cli.exit_codes)

        def run_cell(values: dict[str, Any], cell_dir: Path) -> dict[str, Any]:
            return cell_summary(build_config(args, base_url, **fixed, **values, out=cell_dir), codes)

        sweep = Sweep(
            axes=axes,
            out=out,
            run_cell=run_cell,
            refine=args.refine,
            slo_target=args.slo_target,
            stop=StopRule(args.stop_error_rate, args.stop_e2e_factor),
            progress=lambda line: print(f"pytps sweep: {line}", file=sys.stderr, flush=True),
        )
        index = sweep.run()
    if args.json:
        print(json.dumps(index, indent=2))
    else:
        print_curve(index)
    print(f"results: {out} (sweep.json indexes the cells)", file=sys.stderr)
    if args.html is not None:
        write_html(out, args.html)
    return overall_exit_code(codes)


def cmd_search(args: argparse.Namespace) -> int:
    """`pytps sweep --search AXIS`: probes as cells of a sweep folder, sweep.json's `search` the answer."""
    from pytps.cli.search_run import search_folder
    from pytps.measure.slo import parse_slo_run
    from pytps.report.sweep_curve import print_curve
    from pytps.sweep.matrix import SEARCH_KEYS

    for name in ("concurrency", "rate"):
        if getattr(args, name) is not None:
            raise ConfigError(
                f"--search {args.search} places the load itself: leave out --{name} (or use --search-start)"
            )
    for name in ("duration", "requests"):
        if getattr(args, name) is not None:
            raise ConfigError(
                f"--search {args.search} bounds each probe in time: leave out --{name} (use --search-probe-s)"
            )
    out = results_dir(args, "sweep")
    with ExitStack() as stack:
        base_url = endpoint_url(args, stack, "searching")
        build_config(args, base_url, **{args.search: 1})  # every flag checked first
        index = search_folder(
            {k: getattr(args, k) for k in SEARCH_KEYS},
            parse_slo_run(args.slo_run),
            out,
            lambda load, cell_out: build_config(args, base_url, **load, out=cell_out),
            lambda line: print(f"pytps sweep: {line}", file=sys.stderr, flush=True),
        )
    if args.json:
        print(json.dumps(index, indent=2))
    else:
        from pytps.sweep.search import capacity_line

        print_curve(index)
        print(capacity_line(index["search"]))
    print(f"results: {out} (sweep.json indexes the probes)", file=sys.stderr)
    if args.html is not None:
        write_html(out, args.html)
    return 0
