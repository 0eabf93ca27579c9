"""`pytps report DIR`: the report of a saved run, from its files alone."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytps.errors import ConfigError
from pytps.results.files import RESULTS, SWEEP_INDEX

EXAMPLES = """examples:
  pytps report results/20261201T120000Z-my-model/
  pytps report results/20261201T120000Z-my-model/ --json | jq .ttft_s
  pytps report results/20261201T120000Z-my-model/ --markdown >> notes.md
  pytps report results/20261201T120000Z-my-model/ --csv > summary.csv
  pytps report results/20261201T120000Z-my-model/ --trace run.trace.json   # chrome://tracing, Perfetto
  pytps report results/20261201T120000Z-my-model/ --html            # writes report.html in the folder
  pytps report results/20261201T120000Z-sweep/                      # a sweep's folder: its curve and knee
  pytps report results/20261201T120000Z-sweep/ --html sweep.html
  pytps report results/20261201T120000Z-my-model/ --repair          # a killed run: write its results
"""


def add_html_argument(p: argparse.ArgumentParser, what: str) -> None:
    """--html [FILE], shared by report, run and sweep."""
    p.add_argument(
        "--html",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help=f"also write {what} as one self-contained HTML file with plots, which opens offline "
        "(default FILE: report.html in the results folder; needs bokeh: pip install bokeh; docs/report.md)",
    )


def check_html_available() -> None:
    """The one-line error for a missing extra, before a run measures anything."""
    import importlib.util

    if importlib.util.find_spec("bokeh") is None:
        raise ConfigError("--html needs the bokeh package: pip install bokeh")


def write_html(directory: Path, html: str) -> None:
    """--html's file, and a line on stderr naming it."""
    import sys

    from pytps.report.html import write_report

    written = write_report(directory, html or None)
    print(f"report: {written}", file=sys.stderr)


HELP = "print the report of a saved run"
DESCRIPTION = (
    "Print the report of a run saved by `pytps run`, read from its results.json "
    "alone, so it is the same report the run printed."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="a results directory written by pytps run, or a sweep's (results/<time>-sweep/)")
    add_html_argument(p, "the report")


def report_sweep(path: Path, args: argparse.Namespace) -> int:
    """A sweep's folder: its curve and knee as `pytps sweep` printed them (--json: sweep.json)."""
    from pytps.report.sweep_curve import print_curve

    if args.html is not None:
        write_html(path, args.html)
        if not args.json:
            return 0
    if args.trace or args.markdown or args.csv:
        raise ConfigError(f"{path} is a sweep: --trace, --markdown and --csv take one of its cells/*/ folders")
    index = json.loads((path / SWEEP_INDEX).read_text(encoding="utf-8"))
    if args.json:
        print(json.dumps(index, indent=2))
    else:
        print_curve(index)
    return 0


def report_llmd(path: Path) -> int:
    """`--format llmd-report`: the report(s) on stdout, the fields left empty on stderr."""
    import sys

    from pytps.report.llmd import reports, unfilled_note

    if not (path / RESULTS).exists() and not (path / SWEEP_INDEX).exists():
        raise ConfigError(f"{path} holds no run or sweep: name a directory written by pytps run or pytps sweep")
    found = reports(path)
    sweep = not (path / RESULTS).exists()
    print(json.dumps(found if sweep else found[0], indent=2))
    print(unfilled_note(), file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    import sys

    from pytps.report.console import render
    from pytps.results.rebuild import load_or_rebuild, repair

    path = Path(args.dir)
    if args.format == "llmd-report":
        return report_llmd(path)
    if (path / SWEEP_INDEX).exists() and not (path / RESULTS).exists():
        return report_sweep(path, args)
    if not path.is_dir():
        raise ConfigError(f"{path} is not a directory: name a results directory written by pytps run")
    if args.repair:
        try:
            print(f"{path}: {repair(path)}", file=sys.stderr)
        except FileNotFoundError as exc:
            raise ConfigError(str(exc)) from None
        return 0
    try:
        # A run that did not finish (killed, or a corrupt results.json) is rebuilt from its journal.
        results, note = load_or_rebuild(path)
    except FileNotFoundError as exc:
        raise ConfigError(f"{exc}: name a directory written by pytps run") from None
    if note is not None:
        print(f"pytps: {note} (pytps report --repair {path} writes them)", file=sys.stderr)
    if args.html is not None:
        write_html(path, args.html)
        if not (args.trace or args.json or args.markdown or args.csv):
            return 0
    if args.trace:
        from pytps.report.trace import write_trace

        info = write_trace(path, args.trace, args.trace_max_requests)
        note = f" ({info['note']})" if info.get("note") else ""
        print(f"wrote {args.trace}: {info['requests_in_trace']} requests on {info['tracks']} tracks{note}")
    elif args.json:
        print(json.dumps(results["summary"], indent=2))
    elif args.markdown or args.csv:
        from pytps.report import tables
        from pytps.report.terminal import shown

        text = tables.markdown(results) if args.markdown else tables.csv_text(results)
        print(shown(text, keep_lines=True), end="")
    else:
        render(results)
    return 0
