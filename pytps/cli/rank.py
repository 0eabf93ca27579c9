"""`pytps rank`: flags parsed here, the rank run by pytps.app.rank, its tables printed."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytps.cli._help import plan_from_args
from pytps.errors import ConfigError

EXAMPLES = """examples:
  pytps rank --endpoint a=http://10.0.0.5:8000 --endpoint b=http://10.0.0.6:8000,model=llama-3-8b \\
             --tasks arithmetic --requests 400 --concurrency 8 --min-accuracy 0.85
  pytps rank -c rank.toml --objective e2e_p90 --max-error-rate 0.01
  pytps rank -c rank.toml --every 1h --for 72h --out results/monitor
  pytps rank -c rank.toml --every 1h --for 72h --out results/monitor --resume    # after an interruption
"""

HELP = "rank several endpoints on one workload, interleaved in time, with confidence (docs/rank.md)"
DESCRIPTION = (
    "Send the same items to every endpoint, interleaved so that drift falls on all alike (simultaneous "
    "when they are on different hosts, ABBA blocks when they share one), and rank them by an objective "
    "(time to a correct answer when graded, else E2E p50) under constraints, with paired bootstrap "
    "intervals: endpoints whose difference is not significant share a rank. Each endpoint's run is a "
    "normal results folder under --out, beside rank.json. The run flags below set the workload."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from pytps.cli.report import add_html_argument
    from pytps.cli.run_args import add_run_arguments

    add_html_argument(p, "the rank (the Pareto scatter, the pairwise matrix, the rounds)")
    add_run_arguments(p)
    for action in p._actions:
        if action.dest == "base_url" or action.dest.startswith("emu_"):
            action.help = argparse.SUPPRESS  # the endpoints are --endpoint's or the file's [[endpoint]]s
        elif action.dest == "json":
            action.help = "print rank.json instead of the table"
        elif action.dest == "max_error_rate":
            action.help = "eligible only when the error rate is at most F (0..1)"
        elif action.dest == "slo_run":
            action.help = "eligible only when these run-level targets are met, e.g. ttft:p90=0.5,e2e:p99=10"


def _endpoints(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    """The endpoints and the workload's settings, from --endpoint flags or -c FILE."""
    from pytps.app.rank import matrix_endpoints
    from pytps.app.rank_runs import parse_endpoint
    from pytps.cli.run_args import explicit_settings, flag_settings

    if args.base_url is not None:
        raise ConfigError("pytps rank takes --endpoint NAME=URL (twice or more), not --base-url")
    if args.config:
        if args.endpoint:
            raise ConfigError("give the endpoints as --endpoint flags or in -c FILE's [[endpoint]] tables, not both")
        return matrix_endpoints(args.config, explicit_settings(args, args.parser_defaults))
    return [parse_endpoint(text) for text in args.endpoint], flag_settings(args)


def run(args: argparse.Namespace) -> int:
    from pytps.app.rank import RankSettings, parse_duration, rank
    from pytps.app.runs import results_folder
    from pytps.report.rank_tables import markdown, render

    if args.html is not None:
        from pytps.cli.report import check_html_available

        check_html_available()
    endpoints, run_settings = _endpoints(args)
    # Each of RankSettings' fields from the flag of its name; the durations parsed, --no-store turned round.
    settings = replace(
        plan_from_args(RankSettings, args),
        every_s=parse_duration(args.every, "--every") if args.every else None,
        for_s=parse_duration(args.for_, "--for") if args.for_ else None,
        record=not args.no_store,
    )
    if args.resume and not args.out:
        raise ConfigError("--resume needs --out: the folder of the monitor to continue")
    out = results_folder(args.out, "rank")
    result = rank(endpoints, run_settings, settings, out)
    if args.json:
        print(json.dumps(result.data, indent=2))
    else:
        render(result.data)
    if args.markdown:
        Path(args.markdown).write_text(markdown(result.data), encoding="utf-8")
        print(f"markdown: {args.markdown}", file=sys.stderr)
    if args.html is not None:
        from pytps.report.html_rank import write_rank

        written = write_rank(result.data, Path(args.html) if args.html else out / "rank.html")
        print(f"report: {written}", file=sys.stderr)
    print(f"rank: {out / 'rank.json'}", file=sys.stderr)
    return 0
