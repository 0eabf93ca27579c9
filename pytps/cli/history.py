"""`pytps history`: the results store's runs grouped and trended, `history add DIR...` to import saved
folders, `history check` to flag regressions (exit 1). The jobs are pytps.app.history's, the
arithmetic pytps.report.history's; this module holds the flags and the output (docs/history.md)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from pytps.cli._help import plan_from_args

EXAMPLES = """examples:
  pytps history                                                  # recent runs, grouped
  pytps history --endpoint http://127.0.0.1:8000 --model llama --metric ttft_p50,decode_tps_p50
  pytps history --endpoint http://127.0.0.1:8000 --baseline 12 --html trend.html
  pytps history --fingerprint 3fa2 --html trend.html --relative --max-change 5%
  pytps history --fingerprint 3fa2 --csv > trend.csv
  pytps history add results/                                     # import folders saved before the store
  pytps history add --prune                                      # forget runs whose folders are gone
  pytps history check --metric ttft_p50,tpot_p50 --max-change 10%   # exit 1 on a regression
  pytps history check --limits limits.toml --json

A run is comparable with another exactly when their workload fingerprints match (docs/results.md).
The store: --store PATH|URL, else $PYTPS_STORE, else $XDG_DATA_HOME/pytps/history.sqlite.
"""


HELP = "trends of the runs in the results store, imports, and the regression check"
DESCRIPTION = (
    "Every pytps run, sweep cell and calibration is recorded in the results store. Without a "
    "filter, list recent runs grouped by endpoint, model and workload fingerprint; with --endpoint, --model "
    "or --fingerprint, print each metric's trend with the change against the previous comparable run and "
    "against the baseline."
)


def add_arguments(h: argparse.ArgumentParser) -> None:
    from pytps.settings.table import TABLE

    actions = h.add_subparsers(dest="history_action", metavar="ACTION")
    a = actions.add_parser("add", help="import saved results folders")
    a.add_argument("dirs", nargs="*", metavar="DIR", help="results folders, or folders holding them (searched)")
    TABLE.add_arguments(a, "history add")
    a.set_defaults(func=cmd_add)
    c = actions.add_parser(
        "check",
        help="flag regressions of the latest run against its comparable predecessors (exit 1)",
        description="The latest complete run of each group against up to --window comparable runs before it, "
        "with the bootstrap 95% interval `pytps compare` uses: a regression is a change for the worse beyond "
        "the limit whose interval leaves out 0. One line per regression and exit 1; exit 0 otherwise.",
    )
    TABLE.add_arguments(c, "history check")
    c.set_defaults(func=cmd_check)


def _selection(args: argparse.Namespace) -> Any:
    from pytps.app.history import Selection

    return plan_from_args(Selection, args)


# ---- pytps history ---------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from pytps.app.history import TrendPlan, history

    plan = plan_from_args(TrendPlan, args, metrics="metric", all_kinds="all", max_change="band_max_change")
    selection = _selection(args)
    outcome = history(selection, plan)
    if not outcome.groups:
        print(f"no runs in the results store {outcome.where} match; pytps run records each run there "
              "(pytps history add DIR imports saved folders)", file=sys.stderr)  # fmt: skip
        return 0
    groups, trends = outcome.groups, outcome.trends
    if outcome.html:
        print(f"report: {outcome.html}", file=sys.stderr)
    if args.json:
        print(json.dumps(trends, indent=2))
    elif args.csv:
        _csv(trends)
    elif selection.filtered:
        _render_trends(groups, trends)
    else:
        _render_groups(groups, trends)
    return 0


def _csv(trends: list[dict[str, Any]]) -> None:
    w = csv.writer(sys.stdout)
    w.writerow(
        ["endpoint", "model", "fingerprint", "id", "when_utc", "kind", "status", "metric", "value",
         "change_vs_previous", "change_vs_baseline", "folder"]
    )  # fmt: skip
    for t in trends:
        for metric, m in t["metrics"].items():
            for p in m["points"]:
                w.writerow(
                    [t["endpoint"], t["model"], t["fingerprint"], p["id"], p["when_utc"], p["kind"], p["status"],
                     metric, p["value"], p["change_vs_previous"], p["change_vs_baseline"], p["folder"]]
                )  # fmt: skip


def _console() -> Any:
    from pytps.report.terminal import SafeConsole

    return SafeConsole(width=None if sys.stdout.isatty() else 160)


def _heading(g: Any, tail: str) -> str:
    """A group's first line: its endpoint, model and fingerprint (rich markup)."""
    from rich.markup import escape

    return (
        f"[bold]{escape(g.endpoint)}[/]  model {escape(g.model)}  fingerprint [bold]{g.fingerprint}[/]  "
        f"({escape(g.describe())}{tail}"
    )


def _render_groups(groups: list[Any], trends: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from pytps.report.history import fmt_value

    console = _console()
    for g, t in zip(groups, trends, strict=True):
        console.print(_heading(g, f"; {len(g.runs)} runs shown)"))
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in ("id", "when (UTC)", "kind", "status", *t["metrics"], "folder"):
            right = col in t["metrics"] or col == "id"
            table.add_column(escape(col), justify="right" if right else "left", overflow="fold")
        for i, run in enumerate(g.runs):
            vals = [fmt_value(m, t["metrics"][m]["points"][i]["value"]) for m in t["metrics"]]
            table.add_row(str(run.id), run.as_dict()["when_utc"], run.kind, run.status, *vals, escape(run.folder))
        console.print(table)
        console.print()


def _render_trends(groups: list[Any], trends: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from pytps.report.history import fmt_change, fmt_value

    console = _console()
    for g, t in zip(groups, trends, strict=True):
        console.print(_heading(g, f"); baseline: run {t['baseline']}"))
        for metric, m in t["metrics"].items():
            last = m["points"][-1]
            better = "higher" if m["higher_is_better"] else "lower"
            console.print(
                f"  {metric:<24} {m['sparkline']}  latest {fmt_value(metric, last['value'])}, "
                f"{fmt_change(last['change_vs_previous'])} vs previous, "
                f"{fmt_change(last['change_vs_baseline'])} vs baseline ({better} is better)",
                markup=False,
            )
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("id", justify="right")
        table.add_column("when (UTC)")
        for metric in t["metrics"]:
            table.add_column(escape(f"{metric} (Δprev, Δbase)"), justify="right")
        for i, run in enumerate(g.runs):
            cells = []
            for metric, m in t["metrics"].items():
                p = m["points"][i]
                cells.append(
                    f"{fmt_value(metric, p['value'])} ({fmt_change(p['change_vs_previous'])}, "
                    f"{fmt_change(p['change_vs_baseline'])})"
                )
            table.add_row(str(run.id), run.as_dict()["when_utc"], *cells)
        console.print(table)
        console.print()


# ---- pytps history add -----------------------------------------------------------------------


def cmd_add(args: argparse.Namespace) -> int:
    from pytps.app.history import add

    outcome = add(args.dirs, prune=args.prune, store=getattr(args, "store", None))
    for folder, why in outcome.skipped:
        print(f"pytps: skipped {folder}: {why}", file=sys.stderr)
    print(
        f"{outcome.added} runs added to {outcome.where}, {outcome.known} already there, {len(outcome.skipped)} "
        "unreadable" + (f"; {outcome.forgotten} forgotten (folders gone)" if outcome.forgotten is not None else "")
    )
    return 0


# ---- pytps history check ---------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    from pytps.app.history import CheckPlan, check

    plan = plan_from_args(CheckPlan, args, metrics="check_metric")
    findings = check(_selection(args), plan)
    regressions = [f for f in findings if f.regression]
    if args.check_json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        from pytps.report.terminal import shown

        for f in regressions:
            print(shown(f.console_line()))
        for f in findings:
            if not f.regression:
                print(shown(f.console_line()), file=sys.stderr)
    if not findings:
        print("nothing to check: no group has two complete comparable runs", file=sys.stderr)
    return 1 if regressions else 0
