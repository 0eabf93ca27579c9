"""The served command: a template with `{port}` and the `{name}`s of a server grid
(`--serve-grid np=1,4 --serve-grid ctx=4096,8192`), expanded into one configuration per point."""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass

from pytps.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Configuration:
    """One point of the server grid: its values, in the grid's order."""

    values: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        """`np=1,ctx=4096`; `default` without a grid. Also its folder's name."""
        return ",".join(f"{k}={v}" for k, v in self.values) or "default"

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


def parse_grid(items: list[str] | None) -> list[tuple[str, list[str]]]:
    """`name=v1,v2` each, in order; a name given twice or an empty list is a ConfigError."""
    out: list[tuple[str, list[str]]] = []
    for item in items or []:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise ConfigError(f"--serve-grid {item!r} is not NAME=V1,V2,...; write it like --serve-grid np=1,4")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not vals:
            raise ConfigError(f"--serve-grid {item!r} lists no values; write it like --serve-grid np=1,4")
        if name == "port":
            raise ConfigError("--serve-grid port=...: {port} is pytps's own (a free port per start); name it otherwise")
        if any(name == n for n, _ in out):
            raise ConfigError(f"--serve-grid {name} is given twice; list every value once: --serve-grid {name}=a,b")
        out.append((name, vals))
    return out


def configurations(template: str, grid: list[tuple[str, list[str]]]) -> list[Configuration]:
    """Every point of the grid (the first name varies slowest), checked against the template: each
    `{name}` of the template must be in the grid, and each grid name in the template."""
    fields = set(_FIELD.findall(template))
    names = [n for n, _ in grid]
    missing = sorted(fields - set(names) - {"port"})
    if missing:
        raise ConfigError(
            f"--serve uses {{{missing[0]}}} but no --serve-grid gives it; add --serve-grid {missing[0]}=V1,V2"
        )
    unused = [n for n in names if n not in fields]
    if unused:
        raise ConfigError(f"--serve-grid {unused[0]} is not used by --serve; put {{{unused[0]}}} in the command")
    if "{port}" not in template:
        raise ConfigError("--serve needs {port} in the command: pytps gives the server a free port, e.g. --port {port}")
    points = itertools.product(*(vals for _, vals in grid))
    return [Configuration(tuple(zip(names, point, strict=True))) for point in points]


def command_line(template: str, config: Configuration, port: int) -> list[str]:
    """The argv of one start: the template split as a shell would (no shell runs it), then filled."""
    values = {**config.as_dict(), "port": str(port)}
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise ConfigError(f"--serve {template!r} cannot be split into words: {exc}") from exc
    if not words:
        raise ConfigError("--serve is empty: give the server's command line, e.g. --serve 'llama-server --port {port}'")
    return [_FIELD.sub(lambda m: values[m.group(1)], w) for w in words]
