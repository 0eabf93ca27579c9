"""`pytps run`: flags turned into the run's settings, one call of the application layer
(pytps.app.runs.run_to_folder, or pytps.app.matrix for -c FILE), and the report printed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pytps.app.exit_codes import ERROR_RATE, INTERRUPTED, NO_SUCCESS, TABLE, run_exit_code
from pytps.cli.report import add_html_argument, check_html_available, write_html
from pytps.cli.run_args import emulator_line, endpoint, explicit_settings, flag_settings, say
from pytps.cli.scale_args import add_scale_arguments, scale_options
from pytps.errors import ConfigError
from pytps.workload.request_formats import AUDIO_APIS, REALTIME_API

EXAMPLES = """examples:
  pytps run                                            # the built-in emulator, 100 requests
  pytps run --base-url http://127.0.0.1:8000 --api openai-chat \\
            --input-tokens 512 --output-tokens 256 --concurrency 16 --requests 200 --warmup 4
  pytps run --base-url http://127.0.0.1:8000 --rate 8 --arrival poisson --duration 60
  pytps run --base-url https://api.example.com --api-key-env MY_KEY --dataset prompts.jsonl
  pytps run --base-url http://127.0.0.1:8000 --rate 2000 --duration 60 --workers 4
"""
EXAMPLES += f"\n{TABLE}"  # what the exit status says (pytps.app.exit_codes)


HELP = "benchmark a streaming endpoint (the built-in emulator when no --base-url is given)"
DESCRIPTION = (
    "Benchmark a streaming LLM endpoint. Without --base-url, pytps starts its emulator on "
    "127.0.0.1 and benchmarks that."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_html_argument(p, "the run's report")
    add_scale_arguments(p)


def run(args: argparse.Namespace) -> int:
    if args.pipeline is not None:
        from pytps.cli.voice_run import cmd_voice_turn

        return cmd_voice_turn(args)
    if args.api in AUDIO_APIS:
        from pytps.cli.voice_run import cmd_voice

        return cmd_voice(args)
    if args.api == REALTIME_API:
        from pytps.cli.voice_run import cmd_realtime

        return cmd_realtime(args)
    if args.config:
        return run_matrix_file(args, "run")
    if args.html is not None:
        check_html_available()
    if args.otlp is not None:
        from pytps.app.otlp import check_otlp_available

        check_otlp_available()
    from pytps.app.runs import run_to_folder
    from pytps.app.serve_plan import plain_hooks, serve_options
    from pytps.results.folder import load_results
    from pytps.settings.table import TABLE as SETTINGS

    progress = None
    if sys.stderr.isatty():
        # A live bar only for a person watching; rich is imported only then (and for the table).
        from pytps.cli.progress import RichProgress

        progress = RichProgress()
    settings = flag_settings(args)
    serve = SETTINGS.from_flags(args, "serve")
    opts = serve_options(serve, settings, base_url=args.base_url)
    if opts is not None:
        if scale_options(args) is not None:
            raise ConfigError("--serve with --workers is not supported: run the workers against a --base-url")
        return _run_served(args, opts, settings)
    before, after, redact = plain_hooks(serve, settings)
    between = None
    if before is not None or after is not None:  # the hooks' runner (and a server's) loaded only then
        from pytps.app.served import CellHooks

        between = CellHooks(before, after, redact, say("run"))
    outcome = run_to_folder(
        endpoint(args, settings),
        settings,
        progress=progress,
        scale=scale_options(args),
        say=emulator_line("benchmarking"),
        between=between,
    )
    code = NO_SUCCESS
    if outcome.out_dir is not None:
        results = load_results(outcome.out_dir)
        code = run_exit_code(results["summary"], results["metadata"])
        if args.json:
            print(json.dumps(results["summary"], indent=2))
        else:
            from pytps.report.console import render

            render(results)
        print(f"results: {outcome.out_dir}", file=sys.stderr)
        if args.html is not None:
            write_html(outcome.out_dir, args.html)
        if args.otlp is not None:
            from pytps.app.otlp import export_run

            sent = export_run(outcome.out_dir, args.otlp)
            print(f"pytps: warning: {sent.line}" if sent.warning else sent.line, file=sys.stderr)
    if outcome.interrupted:
        print("pytps: interrupted; the requests that finished are saved", file=sys.stderr)
        return INTERRUPTED
    if code == NO_SUCCESS:
        print("pytps: no measured request succeeded (exit status 3)", file=sys.stderr)
    elif code == ERROR_RATE:
        print("pytps: the run stopped early at --max-error-rate (exit status 4)", file=sys.stderr)
    return code


def run_matrix_file(args: argparse.Namespace, kind: str) -> int:
    """`pytps run -c FILE` / `pytps sweep -c FILE`: the matrix, its lines, its exit status."""
    from pytps.app.matrix import matrix
    from pytps.app.sweeps import SweepPlan
    from pytps.report.matrix_lines import print_matrix
    from pytps.settings.table import TABLE

    if args.html is not None:
        what = "one run" if kind == "run" else "one sweep"
        raise ConfigError(f"--html draws {what}: with -c FILE, use pytps report CELL_DIR --html on a cell")
    if kind == "run" and scale_options(args) is not None:
        raise ConfigError("--workers and --backend ray do not apply to a matrix (-c FILE) yet; run each cell alone")
    outcome = matrix(
        args.config,
        kind,
        overrides=explicit_settings(args, args.parser_defaults),
        base_url=args.base_url,
        out=args.out,
        sweep_plan=SweepPlan.of(TABLE.from_flags(args, "sweep")),
        search_defaults=TABLE.from_flags(args, "search"),
        say=say(f"{kind} -c"),
        serve_settings=TABLE.from_flags(args, "serve"),
    )
    if args.json:
        print(json.dumps(outcome.index, indent=2))
    else:
        print_matrix(outcome.index)
    print(f"results: {outcome.out_dir} (matrix.json indexes the cells)", file=sys.stderr)
    return outcome.exit_code


def _run_served(args: argparse.Namespace, opts: Any, settings: dict[str, Any]) -> int:
    """`pytps run --serve CMD`: one run per server configuration (the folder itself for one)."""
    from pathlib import Path

    from pytps.app.tuning import run_served
    from pytps.results.folder import load_results

    def show(folder: Path) -> None:
        if not args.json:
            from pytps.report.console import render

            render(load_results(folder))

    outcome = run_served(opts, settings, say=opts.say, show=show)
    if args.json:
        print(json.dumps(outcome.index, indent=2, default=str))
    print(f"results: {outcome.out_dir}", file=sys.stderr)
    return outcome.exit_code
