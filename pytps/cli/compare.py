"""`pytps compare A B [C …]`: saved runs side by side, differences from the first with bootstrap
confidence intervals (pytps.app.compare runs the job, pytps.report.compare does the arithmetic;
this module holds the flags and the table)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pytps.cli._help import plan_from_args

EXAMPLES = """examples:
  pytps compare results/before/ results/after/
  pytps compare results/vllm/ results/sglang/ results/trt/          # B and C each against A
  pytps compare a1/,a2/,a3/ b1/,b2/,b3/                            # repeated runs per side
  pytps compare results/before/ results/after/ --json | jq '.metrics[0]'
  pytps compare old/ new/ --max-days 30 --resamples 5000 --seed 1
  pytps compare results/before/ results/after/ --html compare.html  # side by side, overlaid CDFs

Each difference is B − A with a 95% bootstrap interval over requests (over runs, then requests,
for a side of repeated runs); * marks one whose interval leaves out 0. See docs/compare.md.
"""


HELP = "compare saved runs, with confidence intervals on the differences"
DESCRIPTION = (
    "Compare runs saved by `pytps run`: per-request metrics (TTFT, TPOT, E2E, per-user "
    "speeds) and run-level throughput side by side, each against the first run (the baseline), with "
    "the absolute and relative difference and a 95%% bootstrap confidence interval of the difference in "
    "mean and in median. Warns when the runs were not measured alike (model, lengths, load, token "
    "source, transport, dates)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a results directory, or several repeated runs of one setup joined by commas (DIR1,DIR2); "
        "the first is the baseline",
    )


def run(args: argparse.Namespace) -> int:
    from pytps.app.compare import ComparePlan, compare

    outcome = compare(args.runs, plan_from_args(ComparePlan, args), html=args.html)
    if args.json:
        print(json.dumps(outcome.result, indent=2))
    else:
        render(outcome.result)
    if outcome.html:
        print(f"report: {outcome.html}", file=sys.stderr)
    return 0


def render(result: dict[str, Any]) -> None:
    import math

    from rich.markup import escape
    from rich.table import Table

    from pytps.report.numbers import fmt, fmt_signed
    from pytps.report.terminal import SafeConsole

    console = SafeConsole()
    for side in result["sides"]:
        runs = side["runs"]
        what = runs[0] if len(runs) == 1 else f"{len(runs)} runs: " + ", ".join(runs)
        console.print(escape(f"{side['label']} = {what} ({side['requests']} measured requests)"))
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric [unit]", justify="left")
    base = result["sides"][0]["label"]
    table.add_column(base, justify="right")
    for side in result["sides"][1:]:
        label = side["label"]
        table.add_column(label, justify="right")
        table.add_column(escape(f"{label} − {base} [95% CI]"), justify="right")
        table.add_column(escape(f"{label}/{base} − 1"), justify="right")
    for m in result["metrics"]:
        unit, scale = m["unit"], m["scale"]

        def val(v: float | None, _unit: str = unit, _scale: float = scale) -> str:
            return fmt(None if v is None else v * _scale, _unit)

        for stat, entry in m["stats"].items():
            name = "mean" if stat == "mean" else "median"
            row = [escape(f"{m['label']} {name} [{unit}]"), val(entry["values"][0])]
            for value, d in zip(entry["values"][1:], entry["diffs"], strict=True):
                diff = "-" if d["diff"] is None else fmt_signed(d["diff"] * scale, unit)
                if d["ci95"] is not None:
                    lo, hi = (x * scale for x in d["ci95"])
                    diff += f" [{fmt_signed(lo, unit)}, {fmt_signed(hi, unit)}]"
                # Bold and a star where the interval leaves out 0; two spaces keep the columns aligned.
                diff = f"[bold]{escape(diff)} *[/]" if d["significant"] else escape(diff) + "  "
                rel = "-" if d["rel"] is None else fmt_signed(d["rel"] * 100, "%") + "%"
                row += [val(value), diff, rel]
            table.add_row(*row)
    console.print(table)
    for a in result.get("accuracy", []):
        lo, hi = a["ci95"] or (math.nan, math.nan)
        verdict = "[bold]significant *[/]" if a["significant"] else "not significant"
        console.print(
            f"accuracy {a['side']} − {base}: {a['other_accuracy'] or 0:.1%} − {a['base_accuracy'] or 0:.1%} = "
            f"{(a['diff'] or 0) * 100:+.1f} pts [{lo * 100:+.1f}, {hi * 100:+.1f}] over {a['pairs']} paired items "
            f"({a['base_only_right']} right only in {base}, {a['other_only_right']} only in {a['side']}; "
            f"McNemar exact p = {a['mcnemar_p']:.3g}): {verdict}"
        )
    console.print(
        f"* the 95% interval of the difference leaves out 0 ({result['resamples']:,} bootstrap resamples, "
        f"seed {result['seed']}; run-level figures get an interval only with 2 or more runs per side)",
        style="dim",
        markup=False,
    )
    for w in result["warnings"]:
        console.print(f"[yellow]Warning:[/] {escape(w)}")
