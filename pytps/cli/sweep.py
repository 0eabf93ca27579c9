"""`pytps sweep`: a full run per cell of one axis or a grid of two, the curve, and what it says."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pytps.cli._help import add_command
from pytps.cli.exit_codes import TABLE, overall_exit_code, run_exit_code
from pytps.cli.report import add_html_argument, check_html_available, write_html
from pytps.cli.run_args import add_run_arguments, build_config, endpoint_url, results_dir
from pytps.errors import ConfigError

EXAMPLES = """examples:
  pytps sweep --concurrency 1,2,4,8,16,32,64 --requests 32 --output-tokens 32
  pytps sweep --base-url http://127.0.0.1:8000 --concurrency 1..64 --refine 2 --slo ttft=0.5,tpot=0.05
  pytps sweep --base-url http://127.0.0.1:8000 --rate 1..32 --duration 30 --price-input 0.5 --price-output 1.5
  pytps sweep --concurrency 1,8,32 --input-tokens 128,1024,8192 --requests 64      # a grid of two axes
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub,
        "sweep",
        f"{EXAMPLES}\n{TABLE}",
        help="run a list or range of concurrencies, rates or lengths, one full run per cell, and find the knee",
        description="Sweep one axis (or a grid of two) of concurrency, rate, input or output length: each cell "
        "is a full `pytps run` into <out>/cells/<axis>=<value>/, indexed by <out>/sweep.json. Reports the curve "
        "of per-user speed against aggregate throughput, the knee, the most goodput and the SLO capacity "
        "(docs/metrics.md, Sweeps).",
    )
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
    from pytps.calibrate.envelope import envelope_for
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner
    from pytps.sweep.cells import StopRule, Sweep

    if args.config:
        from pytps.cli.matrix_run import run_matrix

        if args.html is not None:
            raise ConfigError("--html draws one sweep: with -c FILE, use pytps report CELL_DIR --html on a cell")
        return run_matrix(args, "sweep")
    if args.html is not None:
        check_html_available()
    axes, fixed = sweep_axes(args)
    for name in ("concurrency", "rate"):
        setattr(args, name, None)  # set per cell
    out = results_dir(args, "sweep")
    with ExitStack() as stack:
        base_url = endpoint_url(args, stack, "sweeping")
        build_config(args, base_url, **fixed, **{a: v[0] for a, v in axes.items()})  # every flag checked first

        codes: list[int] = []  # each cell's exit status (pytps.cli.exit_codes)

        def run_cell(values: dict[str, Any], cell_dir: Path) -> dict[str, Any]:
            cfg = build_config(args, base_url, **fixed, **values, out=cell_dir)
            result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
            if result.interrupted:
                raise KeyboardInterrupt
            codes.append(run_exit_code(result.summary, result.metadata))
            return result.summary

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


def print_curve(index: dict[str, Any]) -> None:
    """The curve as a table (units in every header), then what it says."""
    names = list(index["axes"])
    cols = [
        ("p50 TTFT [ms]", "ttft_p50_s", 1e3, ".1f"),
        ("p50 TPOT [ms]", "tpot_p50_s", 1e3, ".2f"),
        ("mean tok/s/user (E2E)", "user_tps_mean", 1, ",.1f"),
        ("mean decode tok/s/user", "decode_tps_mean", 1, ",.1f"),
        ("output tok/s (all users)", "output_throughput_tps", 1, ",.0f"),
        ("goodput [req/s]", "goodput_rps", 1, ",.2f"),
        ("errors", "error_rate", 100, ".1f"),
    ]
    header = [*names, *(c[0] for c in cols)]
    rows = []
    for cell in index["cells"]:
        h = cell["headline"] or {}
        row = [str(cell["values"][n]) for n in names]
        for _, key, scale, fmt in cols:
            v = h.get(key)
            row.append("-" if v is None else format(v * scale, fmt) + ("%" if key == "error_rate" else ""))
        if cell["status"] != "done":
            row[len(names)] = cell["status"] + (f": {cell['error']}" if cell.get("error") else "")
            row[len(names) + 1 :] = [""] * (len(row) - len(names) - 1)
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(" | ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    for a in index["analysis"]:
        where = ", ".join(f"{k}={v}" for k, v in a["fixed"].items())
        prefix = f"[{where}] " if where else ""
        best = a["max_goodput"]
        most = "-" if best is None else "{:.2f} req/s at {}".format(best["goodput_rps"], best["value"])
        print(
            f"{prefix}knee ({a['axis']}, per-user output tok/s over E2E): {_or_none(a['knee'])} · "
            f"knee on decode tok/s: {_or_none(a['knee_decode'])} · max goodput: {most} · "
            f"SLO capacity ({a['slo_target']:.0%} useful): {_or_none(a['slo_capacity'])}"
        )
    if index.get("stopped"):
        print(f"the sweep {index['stopped']}")


def _or_none(value: Any) -> str:
    return "none in this range" if value is None else str(value)
