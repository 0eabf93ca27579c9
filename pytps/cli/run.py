"""`pytps run`: flags turned into a RunConfig (validated once, by make_config), run, and reported."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING

from pytps.cli.exit_codes import ERROR_RATE, INTERRUPTED, NO_SUCCESS, TABLE, run_exit_code
from pytps.cli.report import add_html_argument, check_html_available, write_html
from pytps.cli.run_args import add_run_arguments, build_config, endpoint_url, flag_settings
from pytps.cli.scale_args import add_scale_arguments, scale_options
from pytps.errors import ConfigError
from pytps.workload.request_formats import AUDIO_APIS, REALTIME_API

if TYPE_CHECKING:
    pass

EXAMPLES = """examples:
  pytps run                                            # the built-in emulator, 100 requests
  pytps run --base-url http://127.0.0.1:8000 --api openai-chat \\
            --input-tokens 512 --output-tokens 256 --concurrency 16 --requests 200 --warmup 4
  pytps run --base-url http://127.0.0.1:8000 --rate 8 --arrival poisson --duration 60
  pytps run --base-url https://api.example.com --api-key-env MY_KEY --dataset prompts.jsonl
  pytps run --base-url http://127.0.0.1:8000 --rate 2000 --duration 60 --workers 4
"""
EXAMPLES += f"\n{TABLE}"  # what the exit status says (pytps.cli.exit_codes)


HELP = "benchmark a streaming endpoint (the built-in emulator when no --base-url is given)"
DESCRIPTION = (
    "Benchmark a streaming LLM endpoint. Without --base-url, pytps starts its emulator on "
    "127.0.0.1 and benchmarks that."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from pytps.cli.voice_args import add_voice_arguments

    add_run_arguments(p)
    add_voice_arguments(p)  # voice (issue 36): its flags in one block, to port into the settings table
    add_html_argument(p, "the run's report")
    add_scale_arguments(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
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
        from pytps.cli.matrix_run import run_matrix

        if args.html is not None:
            raise ConfigError("--html draws one run: with -c FILE, use pytps report CELL_DIR --html on a cell")
        if scale_options(args) is not None:
            raise ConfigError("--workers and --backend ray do not apply to a matrix (-c FILE) yet; run each cell alone")
        return run_matrix(args, "run")
    if args.html is not None:
        check_html_available()
    from pytps.calibrate.envelope import envelope_for
    from pytps.results.folder import load_results
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Progress, Runner

    with ExitStack() as stack:
        scale = scale_options(args)
        base_url = endpoint_url(args, stack, "benchmarking")
        cfg = build_config(args, base_url)
        progress = Progress()
        if sys.stderr.isatty():
            # A live bar only for a person watching; rich is imported only then (and for the table).
            from pytps.cli.progress import RichProgress

            progress = RichProgress()
        runner = Runner(cfg, progress, envelope=envelope_for(cfg))
        try:
            if scale is not None:
                from pytps.scale import run_scaled

                # The workers' progress is shown as one, and Ctrl-C ends the run as a whole.
                result = run_scaled(base_url, flag_settings(args), scale, progress)
            else:
                result = run_coroutine(runner.run())
            interrupted = result.interrupted
        except KeyboardInterrupt:
            interrupted = True
            result = None
        out_dir = result.out_dir if result else None
        if out_dir is None and runner.finished:
            out_dir = cfg.out_dir
        code = NO_SUCCESS
        if out_dir is not None and (out_dir / "results.json").exists():
            results = load_results(out_dir)
            code = run_exit_code(results["summary"], results["metadata"])
            if args.json:
                print(json.dumps(results["summary"], indent=2))
            else:
                from pytps.report.console import render

                render(results)
            print(f"results: {out_dir}", file=sys.stderr)
            if args.html is not None:
                write_html(out_dir, args.html)
        if interrupted:
            print("pytps: interrupted; the requests that finished are saved", file=sys.stderr)
            return INTERRUPTED
    if code == NO_SUCCESS:
        print("pytps: no measured request succeeded (exit status 3)", file=sys.stderr)
    elif code == ERROR_RATE:
        print("pytps: the run stopped early at --max-error-rate (exit status 4)", file=sys.stderr)
    return code
