"""What `pytps run` and `pytps sweep` share: their flags (pytps.settings.table), the settings
the parsed flags make, the endpoint they name, and the one line saying the emulator started."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pytps.settings.table import TABLE

if TYPE_CHECKING:
    from pytps.app.endpoint import Endpoint


def add_run_arguments(p: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    """Every flag of a run (pytps.settings.table); with sweep, the load and length flags take
    lists (the sweep's axes), and the sweep's and the capacity search's flags are there too."""
    TABLE.add_arguments(p, "sweep" if sweep else "run")


def explicit_settings(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> dict[str, Any]:
    """The settings of the flags given on the command line: what overrides a matrix file."""
    return TABLE.explicit(args, parser_defaults)


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The run's settings (make_config's keyword arguments), from the flags."""
    return TABLE.from_flags(args)


def endpoint(args: argparse.Namespace, settings: dict[str, Any]) -> Endpoint:
    """--base-url, or the built-in emulator with the --emu-* flags."""
    from pytps.app.endpoint import Endpoint, emulator_settings

    if args.base_url is not None:
        return Endpoint(str(args.base_url))
    return Endpoint(None, emulator_settings(TABLE.from_flags(args, "emulator"), settings))


def emulator_line(doing: str) -> Any:
    """The one line saying the built-in emulator was started, and where."""
    return lambda url: print(f"no --base-url: {doing} the built-in emulator at {url}", file=sys.stderr)


def say(command: str) -> Any:
    """A job's progress lines, on stderr."""
    return lambda line: print(f"pytps {command}: {line}", file=sys.stderr, flush=True)
