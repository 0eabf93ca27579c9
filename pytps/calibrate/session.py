"""A calibration: the ladder, row by row, each row against one emulator process, every client
going up in concurrency until the emulator can no longer keep its schedule."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytps.calibrate.clients import Client
from pytps.calibrate.emulator_process import EmulatorProcess
from pytps.calibrate.envelope import LOWER_BOUND_NOTE, host_facts
from pytps.calibrate.figures import CellFigures, cell_figures
from pytps.calibrate.ladder import Cell, Ladder
from pytps.calibrate.measure import measure_client, measure_transport, read_floor_us_per_event

FORMAT = "pytps-calibration/1"


@dataclass
class Who:
    """A measured client: one of pytps's transports, or another client."""

    name: str
    transport: str | None = None  # pytps's own transport name
    client: Client | None = None


@dataclass
class Settings:
    ladder: Ladder
    who: list[Who]
    thresholds: dict[str, float]
    kernel_timestamps: bool = False
    read_delay_ns: int = 0  # the slowed-client test hook (native only)
    read_floor_s: float = 0.3
    skipped: list[dict[str, str]] = field(default_factory=list)


def run_calibration(s: Settings, on_cell: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The calibration's raw numbers (what --json writes): host, thresholds, and every cell."""
    cells: list[dict[str, Any]] = []
    stopped: list[dict[str, Any]] = []
    ladder = s.ladder
    interrupted = False
    try:
        _run_rows(s, cells, stopped, on_cell)
    except KeyboardInterrupt:
        interrupted = True  # the cells measured so far are kept, shown and saved
    return {
        "format": FORMAT,
        **host_facts(),
        "thresholds": dict(s.thresholds),
        "lower_bound": LOWER_BOUND_NOTE,
        "reference_stamp": "the emulator's stamp taken when the write() of the event returned (truth sent_ns)",
        "ladder": {
            "rates_tps": list(ladder.rates_tps),
            "concurrency": list(ladder.concurrency),
            "stream_s": ladder.stream_s,
            "rounds": ladder.rounds,
        },
        "kernel_timestamps": s.kernel_timestamps,
        "read_delay_us": s.read_delay_ns / 1e3,
        "clients": [w.name for w in s.who],
        "skipped": s.skipped,
        "stopped": stopped,
        "interrupted": interrupted,
        "cells": cells,
    }


def _run_rows(
    s: Settings,
    cells: list[dict[str, Any]],
    stopped: list[dict[str, Any]],
    on_cell: Callable[[dict[str, Any]], None] | None,
) -> None:
    ladder = s.ladder
    for rate, tpe in ladder.rows():
        done: set[str] = set()
        row_cells = [Cell(rate, tpe, n) for n in ladder.concurrency]
        max_out = max(ladder.output_tokens(c) for c in row_cells)
        with EmulatorProcess(itl_us=row_cells[0].itl_us, tokens_per_event=tpe, max_output_tokens=max_out) as emu:
            for cell in row_cells:
                if len(done) == len(s.who):
                    break
                floor = read_floor_us_per_event(cell, s.read_floor_s)
                n_out = ladder.output_tokens(cell)
                for who in s.who:
                    if who.name in done:
                        continue
                    if who.transport is not None:
                        streams, cpu, sent = measure_transport(
                            emu.base_url, who.transport, cell, n_out, rounds=ladder.rounds,
                            kernel_timestamps=s.kernel_timestamps and who.transport == "native",
                            read_delay_ns=s.read_delay_ns if who.transport == "native" else 0,
                        )  # fmt: skip
                    else:
                        assert who.client is not None
                        streams, cpu, sent = measure_client(emu.base_url, who.client, cell, n_out, rounds=ladder.rounds)
                    truth = emu.take_truth(sent)
                    truth = [t for t in truth if t["planned_events"] > 1]  # not the warm-ups
                    fig = cell_figures(
                        streams, truth, events_per_s=cell.events_per_s, cpu_s=cpu, thresholds=s.thresholds,
                        read_floor_us_per_event=floor,
                    )  # fmt: skip
                    entry = {
                        "client": who.name,
                        "kind": "transport" if who.transport else "client",
                        "rate_tps": cell.rate_tps,
                        "tokens_per_event": cell.tokens_per_event,
                        "events_per_s": cell.events_per_s,
                        "concurrency": cell.concurrency,
                        "output_tokens": n_out,
                        "figures": fig.as_dict(),
                    }
                    cells.append(entry)
                    if on_cell:
                        on_cell(entry)
                    why = why_the_row_stops(fig)
                    if why is not None:
                        done.add(who.name)
                        stopped.append({
                            "client": who.name, "rate_tps": rate, "tokens_per_event": tpe,
                            "concurrency": cell.concurrency, "why": why,
                        })  # fmt: skip


def why_the_row_stops(fig: CellFigures) -> str | None:
    """Why a row goes no higher in concurrency for this client after this cell, or None."""
    if not fig.emulator_kept_schedule:
        # Higher concurrency would only be later: the cells would not test the rate they name.
        return (
            f"the emulator fell behind its schedule (median lateness {fig.emulator_late_p50_us:,.0f} µs, "
            f"p99 {fig.emulator_late_p99_us:,.0f} µs, {fig.emulator_rate_share:.0%} of the event rate)"
        )
    if not fig.kept_up:
        # The client built up a backlog: more streams would only be later, and take longer.
        return f"the client fell behind (its stamp delay grew {fig.delay_growth_us:,.0f} µs over a stream)"
    return None
