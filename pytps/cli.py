"""The pytps command line: one subcommand per job."""

from __future__ import annotations

import argparse
import json
import sys


def _cmd_clock(_args: argparse.Namespace) -> int:
    from . import clock_info

    print(json.dumps(clock_info(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="pytps", description="Token timing for streaming LLM endpoints.")
    parser.add_argument("--version", action="version", version=f"pytps {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from .cli_run import add_run_parser

    add_run_parser(sub)
    p = sub.add_parser("clock", help="show the monotonic clock's resolution and call cost")
    p.set_defaults(func=_cmd_clock)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .errors import PytpsError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except PytpsError as exc:
        # One clear line, no traceback: the message says what was wrong and what to do.
        print(f"pytps: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pytps: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
