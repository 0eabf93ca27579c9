"""The pytps command line: one module per command (run, report, serve, clock), each with its
own parser, examples and handler; this module dispatches and turns errors into one line."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (a command's name, or "" for none), only that command's flags
    are added: the others are listed in --help by name and summary, which needs none of their
    flags, and a process runs one command. Some commands' flags import what their choices come
    from (rank: the run machinery, numpy), so adding them all cost every command, `--version`
    included, ~250 ms of imports (issue 42)."""
    import argparse

    from pytps._version import __version__
    from pytps.app.exit_codes import TABLE
    from pytps.cli import agents, calibrate, clock, compare, history, import_, rank, report, run, serve, sweep
    from pytps.cli._help import add_command, command_name

    parser = argparse.ArgumentParser(
        prog="pytps",
        description="Token timing for streaming LLM endpoints.",
        epilog=f"Run `pytps COMMAND --help` for a command's flags and examples.\n\n{TABLE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pytps {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (run, sweep, rank, agents, report, compare, history, import_, serve, clock, calibrate):
        add_command(sub, command, flags=only is None or only == command_name(command))
    return parser


#: Signals that end a run as Ctrl-C does (stop sending, keep what was measured, write the
#: summary), and the exit status each then gives: docker stop, kubectl, `timeout` and CI runners
#: send SIGTERM; a closed terminal, SIGHUP.
_STOP_SIGNALS: dict[int, int] = {signal.SIGTERM: 143, signal.SIGHUP: 129}


def main(argv: list[str] | None = None) -> int:
    """The `pytps` command; argv None means this process's own arguments (the console script)."""
    received: list[int] = []
    previous: dict[int, signal._HANDLER] = {}
    try:
        _catch_stop_signals(received, previous)
        # A parent may start pytps with these blocked until its main() can take them (the SIGINT
        # stress test does, so that no signal lands before this try): from here they are handled.
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, *_STOP_SIGNALS})
        code = _dispatch(argv)
    except KeyboardInterrupt:
        # Ctrl-C before a command could say more (start-up): one line, no traceback.
        print("pytps: interrupted", file=sys.stderr)
        code = 130
    except Exception as exc:
        # A Ctrl-C that lands inside an import can surface wrapped: dataclasses re-raises it from
        # __set_name__ as a RuntimeError. It is still the user's Ctrl-C, not a bug to report.
        if not _caused_by_interrupt(exc):
            raise
        print("pytps: interrupted", file=sys.stderr)
        code = 130
    if argv is None:
        # The command is over and its files are written: a Ctrl-C (or SIGTERM) from here to the
        # exit changes nothing, and must not turn a finished run into a killed one (exit status -2).
        for signum in (signal.SIGINT, *_STOP_SIGNALS):
            signal.signal(signum, signal.SIG_IGN)
    else:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if code == 130 and received:
        code = _STOP_SIGNALS[received[0]]
    return code


def _catch_stop_signals(received: list[int], previous: dict[int, signal._HANDLER]) -> None:
    """SIGTERM and SIGHUP made Ctrl-C: each calls whatever handles SIGINT at that moment (the
    event loop's, which cancels the run so that it finishes with what it measured; or Python's,
    which raises KeyboardInterrupt), and is noted for the exit status. The handlers replaced go
    to `previous`. Only the main thread may set them: elsewhere, nothing changes."""

    def as_interrupt(signum: int, frame: object) -> None:
        received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)  # type: ignore[arg-type]
        elif handler == signal.SIG_DFL:
            raise KeyboardInterrupt

    for signum in _STOP_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, as_interrupt)
        except ValueError:  # not the main thread
            return


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _dispatch(argv: list[str] | None) -> int:
    import os

    from pytps.errors import PytpsError

    # pytps does no linear algebra: one OpenBLAS thread, not one per core started at numpy's
    # import (~50 ms of CPU that every run would pay). A user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    words = sys.argv[1:] if argv is None else argv
    # The command is the first word when it is one (argparse reads it there too); otherwise
    # (--version, --help, a mistake) no command's flags are needed.
    parser = build_parser(only=words[0] if words and not words[0].startswith("-") else "")
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except PytpsError as exc:
        # One clear line, no traceback: the message says what was wrong and what to do.
        from pytps.report.terminal import shown

        print(f"pytps: error: {shown(exc)}", file=sys.stderr)  # a server's words may be in it
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
