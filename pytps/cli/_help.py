"""How a command module becomes a subcommand: what every command's parser shares."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any, Protocol, TypeVar

Plan = TypeVar("Plan")


class Command(Protocol):
    """A command module of pytps.cli: its one-line help, its description, its examples (shown as
    written, line breaks kept, at the end of --help) and its handler, `run`. Its flags are the table
    of settings' entries of its name (pytps.settings); an `add_arguments(p)` adds what the table
    does not hold (positional arguments, subcommands, another command's flags)."""

    __name__: str
    HELP: str
    DESCRIPTION: str
    EXAMPLES: str

    def run(self, args: argparse.Namespace, /) -> int: ...


def command_name(command: Command) -> str:
    """The subcommand's name: its module's (pytps.cli.run is `pytps run`), or its NAME where the
    word is a Python keyword (pytps.cli.import_ is `pytps import`)."""
    name = getattr(command, "NAME", None)
    return name if isinstance(name, str) else command.__name__.rsplit(".", 1)[-1]


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], command: Command, *, flags: bool = True
) -> None:
    """The subcommand named like its module (pytps.cli.run is `pytps run`), its flags and its
    handler; flags=False: its name and summary only (pytps.cli.build_parser)."""
    p = sub.add_parser(
        command_name(command),
        help=command.HELP,
        description=command.DESCRIPTION,
        epilog=command.EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if flags:
        from pytps.settings.table import TABLE

        TABLE.add_arguments(p, command_name(command))
        add_arguments = getattr(command, "add_arguments", None)
        if add_arguments is not None:
            add_arguments(p)
        p.set_defaults(func=command.run)


def plan_from_args(cls: type[Plan], args: argparse.Namespace, **dests: str) -> Plan:
    """An app job's settings (a dataclass) from the parsed flags: each field from the flag of its
    name, or of the dest `dests` gives it; a flag the command did not set (a subcommand's
    suppressed one) leaves the field's default."""
    given: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        dest = dests.get(f.name, f.name)
        if hasattr(args, dest):
            given[f.name] = getattr(args, dest)
    return cls(**given)
