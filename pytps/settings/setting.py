"""What one setting is (`Setting`: name, kind, default, unit, help, group, the commands it applies
to, its flag) and what a table of them makes (`Table`: flags, settings from flags, TOML keys,
make_config's checked keywords). The entries are in pytps.settings.table (run and sweep) and
pytps.settings.commands (serve, rank, agents) and pytps.settings.tools (report, compare, history, import,
clock, calibrate)."""

from __future__ import annotations

import argparse
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytps.errors import ConfigError

RUN = frozenset({"run"})
SWEEP = frozenset({"sweep"})
BOTH = frozenset({"run", "sweep"})

#: What a setting is for: a run's make_config keyword ("config"), the built-in emulator's
#: (`emulator`, its keyword is the name less "emu_"), a sweep's or a capacity search's own, the
#: command line's alone ("cli": where the endpoint is, what is printed), or the launched server's
#: ("serve": --serve and its companions, pytps.app.served). The commands with flags of their own
#: have a target each, a namespace of its own (`pytps serve --seed` is not the run's --seed):
#: "server" (`pytps serve`: the Emulator keyword of its name), "rank", "agents", and one for each
#: command that reads saved runs or this machine (`pytps history`'s subcommands share its target).
OWN_TARGETS = ("server", "rank", "agents", "report", "compare", "history", "import", "clock", "calibrate")
TARGETS = ("config", "emulator", "sweep", "search", "cli", "serve", *OWN_TARGETS)

#: The group of a command's flags that --help lists under its own "options", not a group's title.
OPTIONS = "options"

#: The values a setting takes, by kind: what make_config accepts (None too, when the default is None).
KINDS: dict[str, tuple[type, ...]] = {
    "int": (numbers.Integral,),
    "float": (numbers.Real,),
    "str": (str,),
    "bool": (bool,),
    "length": (str, numbers.Integral),  # N, N:sd or lo-hi
    "path": (str, os.PathLike),
    "mapping": (Mapping,),
    "store": (str, os.PathLike, bool),
    "slo": (str, Mapping),
    "names": (str, list, tuple),
    "seconds": (str, numbers.Real),
    "urls": (str, list, tuple, bool),
    "keys": (bool, str),
}
_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "length": "a length (N, N:sd or lo-hi)",
    "path": "a path",
    "mapping": "a table of names to values",
    "store": "a path or URL, or false",
    "slo": "NAME=S,... or a table",
    "names": "a name, a comma-separated list or a list",
    "seconds": "seconds (S, S:SD, LO-HI or exp:M)",
    "urls": "a URL, a list of URLs, or true",
    "keys": "true or KEY,...",
}


@dataclass(frozen=True)
class Sweep:
    """A setting's flag as `pytps sweep` shows it, when it differs: an axis takes a list."""

    metavar: str
    help: str


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: Any = None
    help: str | None = None
    group: str = "endpoint"
    unit: str | None = None
    applies: frozenset[str] = BOTH  # the commands with this flag: run, sweep
    toml: str | None = None  # the matrix table that takes it as a key: "workload" or "endpoint"
    target: str = "config"
    # The flag: its name (None: no flag; "": --name with dashes), and argparse's spelling of it.
    flag: str | None = ""
    short: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    action: str | None = None  # store_true, store_false, append
    nargs: str | None = None
    const: Any = None
    dest: str | None = None  # argparse's dest, when not the name (--header: header)
    flag_default: Any = field(default=None)  # argparse's default, when it differs (append: [])
    exclusive: bool = False  # one of its group's mutually exclusive flags (report's --json, --csv, ...)
    typed_flag: bool = True  # int/float kinds: argparse converts the flag's text
    flag_type: Callable[[str], Any] | None = None  # argparse's type, when not the kind's (int, float)
    sweep: Sweep | None = None
    # The setting's value from the parsed flags, when it is not the flag's value as it stands.
    from_args: Callable[[argparse.Namespace], Any] | None = None
    reads: tuple[str, ...] = ()  # the flag dests from_args reads (explicit(): what was given)

    @property
    def flag_name(self) -> str | None:
        if self.flag is None:
            return None
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def arg_dest(self) -> str:
        return self.dest or self.name

    @property
    def dests(self) -> tuple[str, ...]:
        return self.reads or (self.arg_dest,)

    def check(self, value: Any) -> None:
        """ConfigError naming the setting when value is not of its kind."""
        if value is None and self.default is None:
            return
        kinds = KINDS[self.kind]
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if not ok:
            flag = f" ({self.flag_name})" if self.flag_name else ""
            raise ConfigError(
                f"{self.name}{flag} must be {_KIND_WORDS[self.kind]}, got {value!r} ({type(value).__name__})"
            )


class Table:
    """The settings, by name, with what is made from them; `groups`: the titles of the flags'
    groups, in the order --help shows them."""

    def __init__(self, settings: Iterable[Setting], groups: tuple[str, ...]) -> None:
        self.settings = tuple(settings)
        self.groups = groups
        # The run's and sweep's settings by name (a command's own are in their target's namespace).
        self.by_name = {s.name: s for s in self.settings if s.target not in OWN_TARGETS}
        if len({(s.target if s.target in OWN_TARGETS else "", s.name) for s in self.settings}) != len(self.settings):
            raise ValueError("two settings of one command share a name")
        for s in self.settings:
            if s.target not in TARGETS or s.kind not in KINDS or s.group not in (OPTIONS, *groups):
                raise ValueError(f"setting {s.name}: unknown target, kind or group")

    def target(self, target: str) -> tuple[Setting, ...]:
        return tuple(s for s in self.settings if s.target == target)

    def with_setting(self, setting: Setting) -> Table:
        """This table and one more entry (a test's new setting)."""
        return Table((*self.settings, setting), self.groups)

    # ---- flags ----

    def flags(self, command: str) -> list[str]:
        """Every flag `pytps <command>` takes from the table."""
        return [s.flag_name for s in self.settings if command in s.applies and s.flag_name]

    def add_arguments(self, p: argparse.ArgumentParser, command: str) -> None:
        """The table's flags of `command` (run, sweep, serve, ...; a subcommand as "history check"),
        in their groups. A subcommand's flag that its command takes too defaults to nothing there
        (argparse.SUPPRESS): a subparser's default would overwrite the value given before its name."""
        sweep = command == "sweep"
        parent = command.split()[0] if " " in command else None
        groups: dict[str, Any] = {OPTIONS: p}
        exclusive: dict[str, Any] = {}
        for title in self.groups:
            if any(s.group == title and command in s.applies and s.flag_name for s in self.settings):
                groups[title] = p.add_argument_group(title)
        for s in self.settings:
            if command not in s.applies or not s.flag_name:
                continue
            names = [s.short, s.flag_name] if s.short else [s.flag_name]
            kw: dict[str, Any] = {}
            if s.arg_dest != s.flag_name[2:].replace("-", "_"):
                kw["dest"] = s.arg_dest
            if s.action:
                kw["action"] = s.action
            if s.action == "append":
                kw["default"] = s.flag_default
            elif s.action is None and s.default is not None:
                kw["default"] = s.default
            if parent in s.applies:
                kw["default"] = argparse.SUPPRESS
            form = s.sweep if sweep else None
            if s.flag_type is not None:
                kw["type"] = s.flag_type
            elif s.action is None and form is None and s.typed_flag and s.kind in ("int", "float"):
                kw["type"] = int if s.kind == "int" else float
            if s.nargs is not None:
                kw["nargs"] = s.nargs
            if s.const is not None:
                kw["const"] = s.const
            if s.choices is not None:
                kw["choices"] = s.choices
            metavar = form.metavar if form else s.metavar
            if metavar is not None:
                kw["metavar"] = metavar
            text = form.help if form else s.help
            if text is not None:
                kw["help"] = text
            group = groups[s.group]
            if s.exclusive:
                if s.group not in exclusive:
                    exclusive[s.group] = group.add_mutually_exclusive_group()
                group = exclusive[s.group]
            group.add_argument(*names, **kw)
        # What the flags default to, so that a matrix file is overridden only by flags actually given.
        p.set_defaults(parser_defaults={a.dest: a.default for a in p._actions if a.dest != "help"})

    def from_flags(self, args: argparse.Namespace, target: str = "config") -> dict[str, Any]:
        """The settings of `target` from parsed flags: make_config's keyword arguments by default."""
        out: dict[str, Any] = {}
        for s in self.target(target):
            if not hasattr(args, s.arg_dest) and s.from_args is None:
                continue  # a flag of another command (a sweep's, in a run)
            out[s.name] = s.from_args(args) if s.from_args is not None else getattr(args, s.arg_dest)
        return out

    def explicit(self, args: argparse.Namespace, parser_defaults: Mapping[str, Any]) -> dict[str, Any]:
        """The run settings of the flags given on the command line (those that differ from their
        defaults): what overrides a matrix file."""
        given = {dest for dest, default in parser_defaults.items() if getattr(args, dest, default) != default}
        return {k: v for k, v in self.from_flags(args).items() if given & set(self.by_name[k].dests)}

    # ---- TOML ----

    def toml_keys(self, table: str) -> set[str]:
        """The keys a matrix's [[workload]] (also [defaults]) or [[endpoint]] table takes as settings."""
        return {s.name for s in self.settings if s.toml == table}

    # ---- make_config ----

    def resolve(self, given: Mapping[str, Any], target: str = "config") -> dict[str, Any]:
        """Every setting of `target` (make_config's by default), each checked once: the given
        ones, the defaults for the rest. ConfigError naming an unknown setting or a wrong type."""
        known = {s.name: s for s in self.target(target)}
        for name, value in given.items():
            s = known.get(name)
            if s is None:
                raise ConfigError(
                    f"{name}: not a setting of a run; known settings: {', '.join(sorted(known))} (docs/library.md)"
                )
            s.check(value)
        return {name: given.get(name, s.default) for name, s in known.items()}
