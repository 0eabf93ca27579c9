"""What the HTML report draws, read from a saved run's files (results.json, requests.jsonl,
events.npz) with the metrics' own code: the token layout (metrics.token_layout), ITL samples
(metrics.itl_token_samples_ns), finishes (metrics.finish_of) and requests in flight
(metrics.in_flight_at). Percentiles and the summary table come from results.json, never
recomputed here, so the page and the console say the same."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.metrics import NS_PER_S, finish_of, in_flight_at, itl_token_samples_ns, token_layout
from pytps.results.event_log import load_saved_events
from pytps.results.files import SCRAPES
from pytps.results.folder import SavedResults
from pytps.results.rebuild import load_saved

#: A CDF is drawn through at most this many points (quantiles evenly spaced in probability), so a
#: million ITL samples cost as little on the page as a thousand.
CDF_POINTS = 1000
#: Points of the requests-in-flight step line; more instants than this are binned (the highest
#: level of each bin, so a peak is never smoothed away).
IN_FLIGHT_POINTS = 4000
#: The token arrival timeline draws at most this many requests (rows) and event ticks: beyond
#: them it samples whole requests evenly by request index (report/trace.select_lines), every event
#: of a drawn request kept, so a stall or a burst inside a request still shows.
TIMELINE_MAX_ROWS = 400
#: Latency-against-length scatters draw at most this many requests, picked evenly by index.
SCATTER_MAX_POINTS = 5000
TIMELINE_MAX_TICKS = 40_000


class SavedRun(SavedResults):
    """A saved run with its events (None without events.npz), as the HTML report draws it."""

    def __init__(
        self, path: Path, results: dict[str, Any], journal: list[dict[str, Any]], events: dict[str, np.ndarray] | None
    ) -> None:
        super().__init__(path, results, journal)
        self.events = events

    def pairs(self, x_key: str, y_key: str, limit: int = SCATTER_MAX_POINTS) -> tuple[np.ndarray, np.ndarray, int]:
        """(x, y) of successful measured requests that have both figures, at most `limit` of them
        picked evenly by index, and how many there were in all."""
        xs, ys = [], []
        for line in self.measured():
            x, y = line.get(x_key), line.get(y_key)
            if line.get("ok") and isinstance(x, (int, float)) and isinstance(y, (int, float)):
                xs.append(x)
                ys.append(y)
        total = len(xs)
        keep = np.unique(np.linspace(0, total - 1, limit).astype(np.int64)) if total > limit else np.arange(total)
        return np.asarray(xs, dtype=np.float64)[keep], np.asarray(ys, dtype=np.float64)[keep], total

    def server_series(self) -> list[tuple[str, dict[str, tuple[np.ndarray, np.ndarray]]]]:
        """The server's metrics over time (--server-metrics), per URL: each common gauge's values,
        and generation tokens per second between scrapes, at the scrapes' times in seconds since t0.
        Empty without a scrapes file."""
        from pytps.measure.server_metrics.series import build
        from pytps.measure.server_metrics.summary import read_scrapes

        path = self.path / SCRAPES
        t0 = self.t0_ns()
        if t0 is None or not path.is_file():
            return []
        out = []
        for s in build(read_scrapes(path)).values():
            t_s = (np.asarray(s.times_ns, dtype=np.int64) - t0) / NS_PER_S
            named: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for name in sorted(s.common):
                if s.kinds.get(name) == "gauge":
                    named[name] = (t_s, np.asarray(s.values[name], dtype=np.float64))
            tokens = s.values.get("generation_tokens")
            if tokens is not None and len(t_s) > 1:
                v = np.asarray(tokens, dtype=np.float64)
                named["generation_tokens_per_s"] = (t_s[1:], np.diff(v) / np.diff(t_s))
            out.append((s.url, named))
        return out

    def t0_ns(self) -> int | None:
        """The first measured send: time zero of the summary's time series, and of every plot."""
        sends = [int(line["t_send_ns"]) for line in self.measured()]
        return min(sends) if sends else None

    def events_by_request(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """request index -> (arrival stamps, per-chunk token counts with -1 where unknown)."""
        ev = self.events
        if ev is None or not len(ev["request_index"]):
            return {}
        order = np.argsort(ev["request_index"], kind="stable")
        idx = ev["request_index"][order]
        t = ev["t_ns"][order]
        tok = ev["tokens"][order]
        starts = np.flatnonzero(np.concatenate([[True], idx[1:] != idx[:-1]]))
        bounds = [*starts.tolist(), len(idx)]
        return {int(idx[a]): (t[a:b], tok[a:b]) for a, b in itertools.pairwise(bounds) if b > a}

    def itl_samples_s(self) -> np.ndarray:
        """ITL, one sample per token of every successful measured request, in seconds: the samples
        the summary's itl_s histogram was filled with."""
        by_request = self.events_by_request()
        parts = []
        for line in self.measured():
            if not line.get("ok"):
                continue
            got = by_request.get(int(line["index"]))
            if got is None:
                continue
            times, per_event = got
            layout = token_layout(len(times), per_event, int(line.get("output_tokens") or 0))
            parts.append(itl_token_samples_ns(times, layout))
        if not parts:
            return np.zeros(0)
        return np.concatenate(parts) / NS_PER_S

    def in_flight(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(seconds since t0, requests in flight just after, binned) at each send or finish of a
        measured request, binned to at most IN_FLIGHT_POINTS (the bin's highest level)."""
        t0 = self.t0_ns()
        lines = self.measured()
        if t0 is None:
            return np.zeros(0), np.zeros(0), False
        starts = np.sort(np.asarray([int(line["t_send_ns"]) for line in lines], dtype=np.int64))
        ends_list = [finish_of(line.get("end_ns"), line.get("t_done_ns")) for line in lines]
        ends = np.sort(np.asarray([e for e in ends_list if e is not None], dtype=np.int64))
        instants = np.unique(np.concatenate([starts, ends]))
        level = in_flight_at(starts, ends, instants)
        t_s = (instants - t0) / NS_PER_S
        if len(t_s) > IN_FLIGHT_POINTS:
            edges = np.linspace(t_s[0], t_s[-1], IN_FLIGHT_POINTS + 1)
            which = np.clip(np.searchsorted(edges, t_s, side="right") - 1, 0, IN_FLIGHT_POINTS - 1)
            peak = np.full(IN_FLIGHT_POINTS, -1, dtype=np.int64)
            np.maximum.at(peak, which, level)
            keep = peak >= 0
            return edges[:-1][keep], peak[keep], True
        return t_s, level, False


@dataclass
class Timeline:
    """The token arrival timeline's data: one row per drawn request, ordered by send time."""

    rows: list[dict[str, Any]]  # index, ok, error, start_s, end_s, first_s (None), row
    tick_x_s: np.ndarray  # each drawn event's arrival, seconds since t0
    tick_row: np.ndarray  # its row
    requests_total: int  # measured requests in the run
    sampled: bool  # some requests are not drawn

    @property
    def ticks(self) -> int:
        return len(self.tick_x_s)


def timeline(run: SavedRun, max_rows: int = TIMELINE_MAX_ROWS, max_ticks: int = TIMELINE_MAX_TICKS) -> Timeline:
    from pytps.report.trace import select_lines

    lines = run.measured()
    t0 = run.t0_ns()
    by_request = run.events_by_request()
    if t0 is None:
        return Timeline([], np.zeros(0), np.zeros(0, dtype=np.int64), 0, False)
    events_total = sum(len(by_request.get(int(line["index"]), ((), ()))[0]) for line in lines)
    rows_cap = max_rows
    if events_total > max_ticks:
        # Fewer rows for longer requests: the mean events per request sets how many fit.
        rows_cap = max(1, min(max_rows, int(max_ticks / (events_total / len(lines)))))
    chosen, sampled = select_lines(lines, rows_cap)
    chosen = sorted(chosen, key=lambda line: int(line["t_send_ns"]))
    rows: list[dict[str, Any]] = []
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    budget = max_ticks
    for row, line in enumerate(chosen):
        start = int(line["t_send_ns"])
        end = finish_of(line.get("end_ns"), line.get("t_done_ns"))
        times = by_request.get(int(line["index"]), (np.zeros(0, dtype=np.int64), None))[0]
        times = times[:budget]  # the cap holds even when one request is far longer than the mean
        budget -= len(times)
        last = max([start, *([] if end is None else [end]), *([int(times.max())] if len(times) else [])])
        rows.append(
            {
                "row": row,
                "index": int(line["index"]),
                "ok": bool(line.get("ok")),
                "error": line.get("error"),
                "start_s": (start - t0) / NS_PER_S,
                "end_s": (last - t0) / NS_PER_S,
                "events": len(times),
                "ttft_s": line.get("ttft_s"),
                "e2e_s": line.get("e2e_s"),
            }
        )
        xs.append((times - t0) / NS_PER_S)
        ys.append(np.full(len(times), row, dtype=np.int64))
    tick_x = np.concatenate(xs) if xs else np.zeros(0)
    tick_row = np.concatenate(ys) if ys else np.zeros(0, dtype=np.int64)
    return Timeline(rows, tick_x, tick_row, len(lines), sampled)


def load_saved_run(path: str | Path) -> SavedRun:
    p, results, journal = load_saved(path, need_journal=False)
    return SavedRun(p, results, journal, load_saved_events(p))


def cdf_points(values: np.ndarray, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(value, share of samples at or below it) of the empirical CDF, through at most `points`
    points: every sample when there are fewer, else inverted-CDF quantiles evenly spaced in
    probability (each a value some sample had, as the summary's percentiles)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = len(v)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    if n <= points:
        return v, np.arange(1, n + 1) / n
    ranks = np.unique(np.ceil(np.linspace(1 / points, 1.0, points) * n).astype(np.int64))
    return v[ranks - 1], ranks / n
