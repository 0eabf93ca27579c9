"""Sweeps: one full run per cell of one axis (concurrency, rate, input or output length) or a grid
of two, an index of the cells (sweep.json, docs/results.md) and what the curve says: the knee,
the most goodput, the SLO capacity (docs/metrics.md, "Sweeps").

The cells are run by a callable given to Sweep, so this module knows nothing of transports or
the CLI; `pytps sweep` (pytps.cli.sweep) gives it one that runs `pytps run`'s machinery.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.measure.catalogue import Metric, metric
from pytps.results.files import SWEEP_INDEX
from pytps.settings.table import AXIS_FORMS

#: sweep.json's layout (docs/results.md); bumped on every change.
SWEEP_SCHEMA_VERSION = 2

#: The axes a sweep may run, with the type of their values; the order is the order of a grid.
AXES: dict[str, type] = {"concurrency": int, "rate": float, "input_tokens": int, "output_tokens": int}
# Changes of per-user speed within this fraction are noise, not a knee (runs repeat within ~1% here).
KNEE_NOISE = 0.02
_RANGE = re.compile(r"^\s*([0-9.]+)\s*\.\.\s*([0-9.]+)\s*(?:\+\s*([0-9.]+))?\s*$")

#: Headline figures per cell, from the run's summary: these statistics of its distributions
#: (ttft_s's p50 is ttft_p50_s, user_tps's is user_tps_p50), then its run-level figures as named.
_STATISTICS = {
    "ttft_s": ("p50", "p99"),
    "tpot_s": ("p50",),
    "e2e_s": ("p50", "p99"),
    "user_tps": ("p50", "mean"),
    "decode_tps": ("p50", "mean"),
}
_RUN_LEVEL = (
    "output_throughput_tps", "request_throughput_rps", "goodput_rps", "useful_share", "error_rate", "requests_ok",
    "joules_per_output_token", "input_throughput_per_s", "input_token_throughput_tps", "streamed",
)  # fmt: skip


def _stat_name(key: str, stat: str) -> str:
    return f"{key[:-2]}_{stat}_s" if key.endswith("_s") else f"{key}_{stat}"


#: name -> (summary key, statistic or None).
HEADLINE: dict[str, tuple[str, str | None]] = {
    **{_stat_name(key, stat): (key, stat) for key, stats in _STATISTICS.items() for stat in stats},
    **{key: (key, None) for key in _RUN_LEVEL},
}

#: The cells' table (`pytps sweep`'s console and its HTML page), in order: headline figures.
TABLE = (
    "ttft_p50_s",
    "tpot_p50_s",
    "user_tps_mean",
    "decode_tps_mean",
    "output_throughput_tps",
    "goodput_rps",
    "error_rate",
)


#: The table of cells whose responses were whole bodies (embeddings, rerank, --no-stream): no
#: token arrives before the last byte, so E2E against throughput is the curve.
BODY_TABLE = (
    "e2e_p50_s",
    "e2e_p99_s",
    "request_throughput_rps",
    "output_throughput_tps",
    "input_throughput_per_s",
    "goodput_rps",
    "error_rate",
)
# Shown in BODY_TABLE only when a cell has the figure: output tokens (a --no-stream generation),
# inputs (embeddings, rerank).
_BODY_OPTIONAL = ("output_throughput_tps", "input_throughput_per_s")


def streamed(cells: Sequence[dict[str, Any]]) -> bool:
    """Whether a cell streamed its tokens (or the index predates the `streamed` figure): the
    curve is then per-user speed against throughput, else E2E against throughput."""
    heads = [c.get("headline") or {} for c in cells]
    return not heads or any(h.get("streamed", True) for h in heads)


def table(cells: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The cells' table: TABLE when they streamed, else BODY_TABLE without the figures no cell has."""
    if streamed(cells):
        return TABLE
    heads = [c.get("headline") or {} for c in cells]
    return tuple(n for n in BODY_TABLE if n not in _BODY_OPTIONAL or any(h.get(n) for h in heads))


def headline_metric(name: str) -> tuple[str, Metric]:
    """(heading, catalogue entry) of a headline figure: "TTFT p50 [ms]" and TTFT's entry."""
    key, stat = HEADLINE[name]
    m = metric(key)
    return (m.stat_heading(stat) if stat else m.heading), m


def parse_axis(name: str, text: str) -> list[Any]:
    """`1,2,4`, `1..64` (doubling) or `8..64+8` (stepped) -> the axis values, ascending, distinct."""
    kind = AXES[name]
    flag = "--" + name.replace("_", "-")
    m = _RANGE.match(text)
    try:
        if m:
            lo, hi = kind(float(m.group(1))), kind(float(m.group(2)))
            step = kind(float(m.group(3))) if m.group(3) else None
            if not 0 < lo <= hi or (step is not None and step <= 0):
                raise ValueError
            values: list[Any] = []
            v = lo
            while v <= hi:
                values.append(v)
                v = v + step if step is not None else v * 2
        else:
            values = [kind(float(x)) if kind is int else kind(x) for x in text.split(",") if x.strip()]
            if kind is int and any(float(x) != int(float(x)) for x in text.split(",") if x.strip()):
                raise ValueError
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: write {AXIS_FORMS}, with values > 0") from None
    if not values or any(not v > 0 for v in values):
        raise ConfigError(f"{flag} {text!r}: write {AXIS_FORMS}, with values > 0")
    return sorted(set(values))


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (key, stat) in HEADLINE.items():
        value = summary.get(key)
        out[name] = (value or {}).get(stat) if stat else value
    cost = summary.get("cost") or {}
    out["cost_per_useful_response"] = cost.get("per_useful_response")
    # Graded answers: quality under load, one point per cell (docs/grading.md).
    grading = summary.get("grading") or {}
    out["accuracy"] = grading.get("accuracy")
    out["accuracy_ci95"] = grading.get("accuracy_ci95")
    out["goodput_correct_rps"] = grading.get("goodput_correct_rps")
    return out


def knee(values: Sequence[Any], cells: Sequence[dict[str, Any]], speed: str) -> Any:
    """The load past which per-user speed falls faster than aggregate throughput rises: the first
    value a whose step to the next, b, has (u_a - u_b) / u_a > max((A_b - A_a) / A_a, 0) + KNEE_NOISE, with u the
    per-user `speed` (a headline key: the mean over users, which counts every user where a median
    hides up to half of them waiting in a queue) and A the aggregate output throughput. None: no
    such step."""
    for (a, ca), (_b, cb) in itertools.pairwise(zip(values, cells, strict=True)):
        ua, ub = ca.get(speed), cb.get(speed)
        ta, tb = ca.get("output_throughput_tps"), cb.get("output_throughput_tps")
        if not (ua and ub and ta and tb):
            continue
        # Users must lose speed (when the aggregate falls too, a flat per-user speed is no knee), and
        # by more than run-to-run noise.
        if (ua - ub) / ua > max((tb - ta) / ta, 0.0) + KNEE_NOISE:
            return a
    return None


@dataclass
class StopRule:
    """When a sweep stops early: a cell's error rate above max_error_rate, or its median E2E above
    max_e2e_factor times the first cell's."""

    max_error_rate: float = 0.5
    max_e2e_factor: float = 20.0

    def why(self, first: dict[str, Any], cell: dict[str, Any]) -> str | None:
        err = cell.get("error_rate")
        if err is not None and err > self.max_error_rate:
            return f"error rate {err:.0%} above {self.max_error_rate:.0%}"
        e0, e = first.get("e2e_p50_s"), cell.get("e2e_p50_s")
        if e0 and e and e > self.max_e2e_factor * e0:
            return f"median E2E {e:.3g} s above {self.max_e2e_factor:g}x the first cell's {e0:.3g} s"
        return None


@dataclass
class Cell:
    values: dict[str, Any]
    dir: str
    status: str = "pending"  # done, failed, skipped (after an early stop)
    headline: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class Sweep:
    """Runs every cell of `axes` (one or two), in order, with `run_cell(values, out_dir) -> summary`."""

    axes: dict[str, list[Any]]
    out: Path
    run_cell: Callable[[dict[str, Any], Path], dict[str, Any]]
    stop: StopRule = field(default_factory=StopRule)
    refine: int = 0
    slo_target: float = 0.95
    progress: Callable[[str], None] = lambda line: None
    cells: list[Cell] = field(default_factory=list)
    stopped: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # more of sweep.json (a capacity search's `search`)

    def __post_init__(self) -> None:
        if not 1 <= len(self.axes) <= 2:
            raise ConfigError(
                "a sweep runs one axis or a grid of two; give one or two of --concurrency, --rate, "
                "--input-tokens, --output-tokens as lists"
            )
        if "concurrency" in self.axes and "rate" in self.axes:
            raise ConfigError("concurrency and rate are different load models: sweep one of them")
        if not 0 < self.slo_target <= 1:
            raise ConfigError(f"slo target (--slo-target) {self.slo_target} is outside (0, 1]")

    def _cell(self, values: dict[str, Any]) -> Cell:
        for c in self.cells:
            if c.values == values:
                return c
        name = ",".join(f"{k}={_fmt(v)}" for k, v in values.items())
        cell = Cell(values=values, dir=f"cells/{name}")
        self.cells.append(cell)
        return cell

    def run(self) -> dict[str, Any]:
        names = list(self.axes)
        grid = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*self.axes.values())]
        self._run_cells([self._cell(v) for v in grid])
        for _ in range(self.refine):
            added = self._refinements()
            if not added or self.stopped:
                break
            self._run_cells(added)
        return self.write_index()

    def _run_cells(self, todo: list[Cell]) -> None:
        started = time.monotonic()
        for k, cell in enumerate(todo):
            if cell.status != "pending":
                continue
            if self.stopped:
                cell.status = "skipped"
                continue
            label = ", ".join(f"{n}={_fmt(v)}" for n, v in cell.values.items())
            left = ""
            if k:
                per_cell = (time.monotonic() - started) / k
                left = f", about {per_cell * (len(todo) - k):.0f} s left"
            self.progress(f"cell {k + 1}/{len(todo)}: {label}{left}")
            try:
                summary = self.run_cell(cell.values, self.out / cell.dir)
            except Exception as exc:
                cell.status, cell.error = "failed", f"{type(exc).__name__}: {exc}"
                self.write_index()
                continue
            cell.status, cell.headline = "done", headline(summary)
            first = next(c for c in self.cells if c.status == "done")
            assert first.headline is not None
            why = self.stop.why(first.headline, cell.headline)
            if why is not None:
                self.stopped = f"stopped after {label}: {why}"
            self.write_index()

    def _rows(self) -> list[tuple[dict[str, Any], list[Cell]]]:
        """The curves: cells along the first axis, one curve per value of the second axis."""
        first, *rest = list(self.axes)
        done = [c for c in self.cells if c.status == "done" and c.headline is not None]
        out = []
        for fixed in itertools.product(*(sorted({c.values[n] for c in self.cells}) for n in rest)):
            fixed_values = dict(zip(rest, fixed, strict=True))
            row = sorted(
                (c for c in done if all(c.values[n] == v for n, v in fixed_values.items())),
                key=lambda c: c.values[first],
            )
            out.append((fixed_values, row))
        return out

    def _refinements(self) -> list[Cell]:
        """Cells halfway between the knee and its neighbours, where they are new."""
        first = next(iter(self.axes))
        added: list[Cell] = []
        for fixed, row in self._rows():
            values = [c.values[first] for c in row]
            k = knee(values, [c.headline or {} for c in row], "user_tps_mean")
            if k is None:
                continue
            i = values.index(k)
            for lo, hi in ((values[i - 1] if i else None, k), (k, values[i + 1] if i + 1 < len(values) else None)):
                if lo is None or hi is None:
                    continue
                mid = (lo + hi) / 2
                if AXES[first] is int:
                    mid = int(mid)
                if lo < mid < hi and all(c.values[first] != mid for c in row):
                    added.append(self._cell({first: mid, **fixed}))
        return added

    def analysis(self) -> list[dict[str, Any]]:
        first = next(iter(self.axes))
        out = []
        for fixed, row in self._rows():
            values = [c.values[first] for c in row]
            heads = [c.headline or {} for c in row]
            best = max(row, key=lambda c: (c.headline or {}).get("goodput_rps") or 0.0, default=None)
            capable = [c.values[first] for c in row if ((c.headline or {}).get("useful_share") or 0) >= self.slo_target]
            at_knee = knee(values, heads, "user_tps_mean")
            knee_heads = [h for v, h in zip(values, heads, strict=True) if v == at_knee]
            out.append(
                {
                    "fixed": fixed,
                    "axis": first,
                    "knee": knee(values, heads, "user_tps_mean"),
                    "knee_decode": knee(values, heads, "decode_tps_mean"),
                    "max_goodput": None
                    if best is None or not (best.headline or {}).get("goodput_rps")
                    else {"value": best.values[first], "goodput_rps": (best.headline or {})["goodput_rps"]},
                    "slo_capacity": max(capable) if capable else None,
                    "slo_target": self.slo_target,
                    # Graded answers: accuracy at the lowest load against accuracy at the knee.
                    "accuracy_first": heads[0].get("accuracy") if heads else None,
                    "accuracy_at_knee": knee_heads[0].get("accuracy") if knee_heads else None,
                }
            )
        return out

    def write_index(self) -> dict[str, Any]:
        index = {
            "schema_version": SWEEP_SCHEMA_VERSION,
            "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "axes": {name: list(values) for name, values in self.axes.items()},
            "cells": [
                {"values": c.values, "dir": c.dir, "status": c.status, "headline": c.headline, "error": c.error}
                for c in sorted(self.cells, key=lambda c: tuple(c.values[n] for n in self.axes))
            ],
            "analysis": self.analysis(),
            "stopped": self.stopped,
            **self.extra,
        }
        self.out.mkdir(parents=True, exist_ok=True)
        # Imported here: the flags' help (cli/run_args) reads this module's names, without numpy.
        from pytps.results.folder import write_json_atomic

        write_json_atomic(self.out / SWEEP_INDEX, index)
        return index


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
