"""A benchmark matrix in TOML (`pytps run -c bench.toml`, `pytps sweep -c bench.toml`): endpoints x
workloads, with shared defaults, SLOs and validation. Every cell is a run (or, for sweep, a
sweep) into one results folder, indexed by matrix.json; for run, a workload's list-valued key
(`concurrency = [1, 4, 16]`) makes one run per value. Layout: examples/bench.toml and
docs/matrix.md.

Errors name the key and its line: tomllib gives no positions, so a key's line is found in the
text, after the header of the table it belongs to.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.settings.table import TABLE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: A capacity search's settings: `pytps sweep --search ...` and a [[workload]] with `search`
#: (pytps.sweep.search places the probes, pytps.app.search runs them).
SEARCH_KEYS = tuple(s.name for s in TABLE.target("search"))
PRICE_KEYS = {
    "input": "price_input",
    "cached_input": "price_cached_input",
    "output": "price_output",
    "request": "price_request",
    "currency": "currency",
    "bill_failed": "bill_failed",
}


def workload_keys() -> set[str]:
    """The keys of a [[workload]] table (and of [defaults]), read from the table of settings now."""
    return {"name"} | TABLE.toml_keys("workload")


def endpoint_keys() -> set[str]:
    """The keys of an [[endpoint]] table, read from the table of settings now."""
    # serve: a command pytps launches for the endpoint's cells, with {port} (docs/tuning.md).
    return {"name", "url", "prices", "emulator", "serve"} | TABLE.toml_keys("endpoint")


SLO_KEYS = {"per_request", "run", "expect_regex", "expect_json"}
#: Workload keys a sweep may give as lists (its axes).
AXIS_KEYS = ("concurrency", "rate", "input_tokens", "output_tokens")
_TOP = {"endpoint", "workload", "defaults", "slo"}


@dataclass
class Cell:
    endpoint: str
    workload: str
    settings: dict[str, Any]  # make_config's keyword arguments (no base_url)
    base_url: str | None  # None: the built-in emulator, with `emulator` settings
    emulator: dict[str, Any] = field(default_factory=dict)
    serve: str | None = None  # a command template pytps launches per cell (`serve = "…"`)
    where: dict[str, int] = field(default_factory=dict)  # setting -> line in the file, for errors
    values: dict[str, Any] = field(default_factory=dict)  # one run's pick of the list-valued keys (runs())

    @property
    def dir(self) -> str:
        base = f"cells/{_safe(self.endpoint)}/{_safe(self.workload)}"
        return f"{base}/{_values_name(self.values)}" if self.values else base

    def axes(self) -> dict[str, Any]:
        return {k: self.settings[k] for k in AXIS_KEYS if isinstance(self.settings.get(k), list)}

    def runs(self) -> list[Cell]:
        """`pytps run -c`: one run per value of each list-valued key (per combination, for two),
        in ascending order as a sweep's cells; this cell itself when none is a list."""
        axes = {k: sorted(set(v)) for k, v in self.axes().items()}
        if not axes:
            return [self]
        return [
            Cell(
                endpoint=self.endpoint,
                workload=self.workload,
                settings={**self.settings, **values},
                base_url=self.base_url,
                emulator=self.emulator,
                serve=self.serve,
                where=self.where,
                values=values,
            )
            for values in (dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values()))
        ]


class Matrix:
    """A parsed matrix file: its cells, endpoint x workload, in file order."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the matrix file ({exc.strerror})") from None
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        self.data = data
        for key in data:
            if key not in _TOP:
                self._bad(
                    key, f"unknown table or key {key!r}; the file has [[endpoint]], [[workload]], [defaults] and [slo]"
                )
        endpoints = self._tables("endpoint")
        workloads = self._tables("workload")
        if not endpoints or not workloads:
            raise ConfigError(f"{path}: needs at least one [[endpoint]] and one [[workload]] table")
        defaults = data.get("defaults", {})
        self._check_keys(defaults, workload_keys() - {"name"}, "[defaults]", "defaults")
        slo = data.get("slo", {})
        self._check_keys(slo, SLO_KEYS, "[slo]", "slo")
        judged = {
            "slo": slo.get("per_request"),
            "slo_run": slo.get("run"),
            "expect_regex": slo.get("expect_regex"),
            "expect_json": _expect_json(slo.get("expect_json")),
        }
        self.cells: list[Cell] = []
        for e_index, e in enumerate(endpoints):
            self._check_keys(e, endpoint_keys(), f"[[endpoint]] {e.get('name', e_index + 1)}", "endpoint", e_index)
            prices = e.get("prices", {})
            self._check_keys(prices, set(PRICE_KEYS), "prices", "endpoint", e_index)
            for w_index, w in enumerate(workloads):
                self._check_keys(w, workload_keys(), f"[[workload]] {w.get('name', w_index + 1)}", "workload", w_index)
                settings: dict[str, Any] = {k: v for k, v in judged.items() if v is not None}
                settings.update(defaults)
                settings.update({k: v for k, v in w.items() if k != "name"})
                settings.update({k: v for k, v in e.items() if k in TABLE.toml_keys("endpoint")})
                settings.update({PRICE_KEYS[k]: v for k, v in prices.items()})
                where = {k: self.line_of("workload", w_index, k) for k in w}
                where.update({k: self.line_of("endpoint", e_index, k) for k in e})
                where.update({k: self.line_of("defaults", 0, k) for k in defaults})
                self.cells.append(
                    Cell(
                        endpoint=str(e.get("name", f"endpoint{e_index + 1}")),
                        workload=str(w.get("name", f"workload{w_index + 1}")),
                        settings=settings,
                        base_url=e.get("url"),
                        emulator=dict(e.get("emulator", {})),
                        serve=e.get("serve"),
                        where=where,
                    )
                )
        names = [(c.endpoint, c.workload) for c in self.cells]
        if len(set(names)) != len(names):
            raise ConfigError(f"{path}: two endpoints or two workloads share a name; give each its own `name`")

    def _tables(self, name: str) -> list[dict[str, Any]]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            self._bad(name, f"{name} must be written as [[{name}]] tables")
        return list(value)

    def _check_keys(self, table: Any, allowed: set[str], label: str, kind: str, index: int = 0) -> None:
        if not isinstance(table, dict):
            raise ConfigError(f"{self.path}: {label} must be a table")
        for key in table:
            if key not in allowed:
                line = self.line_of(kind, index, key)
                raise ConfigError(
                    f"{self.path}:{line}: {label}: unknown key {key!r}; known keys: {', '.join(sorted(allowed))}"
                )

    def _bad(self, key: str, message: str) -> None:
        raise ConfigError(f"{self.path}:{self.top_line_of(key)}: {message}")

    def top_line_of(self, key: str) -> int:
        """The line (1-based) of a top-level name: its [key] / [[key]] header, or `key = ...`
        (`key.sub = ...`) above the first header, where TOML's top-level keys are."""
        lines = self.text.splitlines()
        header = re.compile(r"^\s*\[\[?\s*" + re.escape(key) + r"\s*[\].]")
        assignment = re.compile(r'^\s*["\']?' + re.escape(key) + r'["\']?\s*[=.]')
        in_top = True
        for i, line in enumerate(lines):
            if header.match(line):
                return i + 1
            if line.lstrip().startswith("["):
                in_top = False
            elif in_top and assignment.match(line):
                return i + 1
        return 1

    def line_of(self, table: str, index: int, key: str | None) -> int:
        """The line (1-based) of `key` in the index-th [table] / [[table]], or of the table's header."""
        lines = self.text.splitlines()
        header = re.compile(r"^\s*\[\[?\s*" + re.escape(table) + r"\s*\]\]?\s*(#.*)?$")
        any_header = re.compile(r"^\s*\[")
        seen = -1
        start = None
        for i, line in enumerate(lines):
            if header.match(line):
                seen += 1
                if seen == index:
                    start = i
                    break
        if start is None:
            return 1
        if key is None:
            return start + 1
        pattern = re.compile(r'(^|[{,\s])"?' + re.escape(key) + r'"?\s*=')
        for i in range(start + 1, len(lines)):
            if any_header.match(lines[i]) and not lines[i].strip().startswith("[" + table + "."):
                break
            if pattern.search(lines[i]):
                return i + 1
        return start + 1

    def locate(self, cell: Cell, exc: ConfigError) -> ConfigError:
        """A ConfigError from building a cell's run, with the file, the line of the key it names, and the cell."""
        message = str(exc)
        line = next((n for key, n in cell.where.items() if re.match(rf"\W*{re.escape(key)}\b", message)), None)
        if line is None:
            line = next((n for key, n in cell.where.items() if re.search(rf"\b{re.escape(key)}\b", message)), None)
        at = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(f"{at}: endpoint {cell.endpoint!r} x workload {cell.workload!r}: {message}")


def _expect_json(value: Any) -> bool | str | None:
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _values_name(values: dict[str, Any]) -> str:
    """A run's values as a sweep names its cells: concurrency=4,input_tokens=128."""
    name = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
    return name.replace("/", "_").replace(" ", "")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in name)[:60] or "_"
