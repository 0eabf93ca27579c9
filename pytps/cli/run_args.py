"""The flags `pytps run` and `pytps sweep` share, and the RunConfig they make (through
pytps.runner.config.make_config, which validates every value once)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.errors import ConfigError
from pytps.settings.table import TABLE

if TYPE_CHECKING:
    from pytps.runner.config import RunConfig


def add_run_arguments(p: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    """Every flag of a run (pytps.settings.table); with sweep, the load and length flags take
    lists (the sweep's axes), and the sweep's and the capacity search's flags are there too."""
    TABLE.add_arguments(p, "sweep" if sweep else "run")


def build_config(args: argparse.Namespace, base_url: str, **cell: Any) -> RunConfig:
    """The RunConfig of these flags; `cell` overrides some (a sweep's axis values, its cell's folder)."""
    from pytps.runner.config import make_config

    settings = flag_settings(args)
    settings.update(cell)
    return make_config(base_url, **settings)


def explicit_settings(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> dict[str, Any]:
    """The settings of the flags given on the command line: what overrides a matrix file."""
    return TABLE.explicit(args, parser_defaults)


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """make_config's keyword arguments, from the flags."""
    return TABLE.from_flags(args)


def endpoint_url(args: argparse.Namespace, stack: ExitStack, doing: str) -> str:
    """--base-url, or the built-in emulator's (started for as long as `stack` lasts) when none is given."""
    if args.base_url is not None:
        return str(args.base_url)
    from pytps.emulator import Emulator

    answers: Any = None
    if args.emu_answer_accuracy is not None:
        if args.tasks is None and args.dataset is None:
            raise ConfigError("--emu-answer-accuracy needs --tasks or --dataset: the references the emulator knows")
        # A sweep's cells all run the same items: enough for the longest of them.
        sessions = (args.sessions or 10) * (args.turns or 1) if args.turns or args.sessions else 0
        count = max(args.requests or 0, sessions, 1000) + args.warmup + 1
        answers = f"tasks:{args.tasks}:{count}:{args.seed}" if args.tasks is not None else args.dataset
    # No truth kept in memory: nothing reads it, and it would grow with the run.
    emu = stack.enter_context(
        Emulator(
            ttft_ms=args.emu_ttft_ms,
            itl_us=args.emu_itl_us,
            prefill_us_per_token=args.emu_prefill_us_per_token,
            prefix_cache_tokens=args.emu_prefix_cache_tokens,
            keep_truth=False,
            answers=answers,
            answer_accuracy=1.0 if args.emu_answer_accuracy is None else args.emu_answer_accuracy,
            answer_accuracy_drop=args.emu_answer_accuracy_drop,
        )
    )
    print(f"no --base-url: {doing} the built-in emulator at {emu.base_url}", file=sys.stderr)
    return emu.base_url


def results_dir(args: argparse.Namespace, kind: str) -> Path:
    """--out, or results/<UTC time>-<kind>/."""
    if args.out:
        from pytps.runner.config import check_out_dir

        return check_out_dir(Path(args.out))
    return Path("results") / (datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{kind}")


def cell_summary(cfg: RunConfig, codes: list[int] | None = None) -> dict[str, Any]:
    """One cell of a sweep or a matrix: a whole run, judged against this host's trust envelope. A
    Ctrl-C during it ends the sweep (the cells done so far are kept)."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner

    cfg.store_as = cfg.store_as and "sweep_cell"  # the results store files it as a sweep's cell
    result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
    if result.interrupted:
        raise KeyboardInterrupt
    if codes is not None:  # each cell's exit status, for the sweep's own (pytps.app.exit_codes)
        from pytps.app.exit_codes import run_exit_code

        codes.append(run_exit_code(result.summary, result.metadata))
    return result.summary
