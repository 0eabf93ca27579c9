"""How a command module becomes a subcommand: what every command's parser shares."""

from __future__ import annotations

import argparse
from typing import Protocol


class Command(Protocol):
    """A command module of pytps.cli: its one-line help, its description, its examples (shown as
    written, line breaks kept, at the end of --help) and its flags (with the handler as `func`)."""

    __name__: str
    HELP: str
    DESCRIPTION: str
    EXAMPLES: str

    def add_arguments(self, p: argparse.ArgumentParser, /) -> None: ...


def command_name(command: Command) -> str:
    """The subcommand's name: its module's (pytps.cli.run is `pytps run`), or its NAME where the
    word is a Python keyword (pytps.cli.import_ is `pytps import`)."""
    name = getattr(command, "NAME", None)
    return name if isinstance(name, str) else command.__name__.rsplit(".", 1)[-1]


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], command: Command, *, flags: bool = True
) -> None:
    """The subcommand named like its module (pytps.cli.run is `pytps run`); flags=False: its name
    and summary only (pytps.cli.build_parser)."""
    p = sub.add_parser(
        command_name(command),
        help=command.HELP,
        description=command.DESCRIPTION,
        epilog=command.EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if flags:
        command.add_arguments(p)
