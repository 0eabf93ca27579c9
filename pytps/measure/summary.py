"""The run's summary, built as requests finish at a constant cost per request and per token.

RunSummary.add() takes each finished request once: its scalars go to compact columns (a few
numbers per request, so request-level percentiles stay exact: a reported p99 is a value some
request had), its per-token figures (ITL, chunk gaps, kernel lag) to streaming histograms, its
counts to running totals. finish() computes what needs the whole run (the measured and steady
windows, the time series) from the columns and one pass over the events, read in pieces.
The formulas are pytps.measure.metrics's; docs/metrics.md defines them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from pytps._native import _core
from pytps.grading.grade import Grade
from pytps.measure.columns import Columns
from pytps.measure.event_rows import event_rows
from pytps.measure.grade_figures import GradeFigures
from pytps.measure.metrics import (
    NS_PER_S,
    RequestMetrics,
    distribution,
    e2e_for,
    event_tokens,
    finish_ns,
    histogram_distribution,
    itl_token_weights_ns,
    request_metrics,
    steady_intervals_of,
    steady_intervals_sorted,
)
from pytps.measure.records import RequestRecord
from pytps.measure.server_timings import SUMMARY_STATS as _SERVER_STATS
from pytps.measure.slo import Judge, Verdict, evaluate_run
from pytps.measure.totals import RunTotals, measured_window_s, request_distributions
from pytps.measure.workload_figures import WorkloadFigures

_NO_NS = -(2**63)  # an int64 column's None
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min

# Per-request columns: name -> array typecode. Seconds are float64, as request_metrics gives
# them, so a percentile is the very value a request had; NaN stands for None.
_SECONDS = (
    "ttft_s",
    "ttfat_s",
    "e2e_s",
    "tpot_s",
    "decode_tps",
    "user_tps",
    "send_overhead_s",
    "ttfb_s",
)
# Rate mode only: from the intended send time.
_SCHED_SECONDS = ("schedule_lag_s", "ttft_sched_s", "e2e_sched_s")


class RunSummary:
    """Accumulates finished requests; finish() gives results.json's summary."""

    def __init__(
        self,
        *,
        target_concurrency: int | None = None,
        rate_mode: bool = False,
        judge: Judge | None = None,
        spill_path: Path | None = None,
    ) -> None:
        """spill_path: where the per-request columns go, a block at a time (pytps.measure.columns),
        so memory does not grow with the run; None keeps them in memory."""
        self.target_concurrency = target_concurrency
        self.rate_mode = rate_mode
        self.steady_intervals: list[tuple[int, int]] = []  # set by finish()
        self.judge = judge or Judge()
        self.totals = RunTotals()  # counts of measured requests (throughput, goodput, errors)
        self.cost_total = 0.0  # of measured requests
        self.grades = GradeFigures()  # graded answers (docs/metrics.md, "Graded answers")
        # A column per figure the summary has percentiles of; e2e_500_s is derived from two of them.
        names = _SECONDS + (_SCHED_SECONDS if rate_mode else ())
        # measured: 1 when not warm-up. Each column is appended to once per request (commit()).
        spec = {**{name: "d" for name in names}, "index": "q", "t_send": "q", "finish": "q", "measured": "b", "ok": "b"}
        self._cols = Columns(spec, spill_path)
        live = self._cols.live
        self._seconds = {name: live[name] for name in names}
        # The columns and their figures read in one call (a tuple: names holds at least two).
        self._seconds_cols = tuple(self._seconds.values())
        self._seconds_of = operator.attrgetter(*names)
        self._index, self._t_send, self._finish = live["index"], live["t_send"], live["finish"]
        self._measured, self._ok = live["measured"], live["ok"]
        self._itl = _core.Histogram()
        self._gaps = _core.Histogram()
        self._kernel_lag = _core.Histogram()
        self.tokens_read = 0  # output tokens of every request, warm-up and failed ones too
        self.workload = WorkloadFigures(
            prompt_includes_cached=self.judge.prompt_includes_cached, spill_path=_beside(spill_path, "workload")
        )
        # The server's own timings of successful measured requests that reported them.
        self._server_cols = Columns({name: "d" for name in _SERVER_STATS}, _beside(spill_path, "server"))
        self._server = self._server_cols.live
        self._server_sources: dict[str, int] = {}

    def add_session(self, t_start_ns: int, t_end_ns: int) -> None:
        """A measured multi-turn session (pytps.workload.sessions): the steady window is then on sessions."""
        self.workload.add_session(t_start_ns, t_end_ns)

    def add(self, rec: RequestRecord, m: RequestMetrics, layout: np.ndarray, verdict: Verdict | None = None) -> None:
        """One finished request: O(1) plus its events, whatever came before."""
        verdict = verdict or self.judge.verdict(rec, m)
        implausible = rec.usage_implausible is not None
        if self._add_scalars(m, finish_ns(rec), rec.retries, verdict, rec.usage, rec.turn, implausible):
            self.add_token_figures(rec.output_times_ns, layout, rec.output_kernel_times_ns)

    def add_journaled(self, line: dict[str, Any]) -> None:
        """One finished request from its journal line (results.Journal) instead of its record: the
        same scalars, so a summary of journals merged from several workers (pytps.scale.merge) is
        the one a single process would have built. Its per-token figures come separately:
        merge_token_histograms, or add_token_figures from its event rows."""
        m = RequestMetrics(**{f.name: line[f.name] for f in fields(RequestMetrics) if f.name in line})
        done = line["end_ns"] if line["end_ns"] is not None else line["t_done_ns"]
        grade = None
        if line.get("grader") is not None:
            why = line.get("why_wrong")
            timed_out = isinstance(why, str) and why.startswith("grader_timeout:")
            grade = Grade(
                line["item"], line["grader"], line["correct"], line.get("score"), why,
                error="grader_timeout" if timed_out else None,
            )  # fmt: skip
        verdict = Verdict(useful=line["useful"], why_not=line["why_not_useful"], cost=line["cost"], grade=grade)
        implausible = line.get("usage_implausible") is not None
        self._add_scalars(m, done, line["retries"], verdict, line["usage"] or {}, line["turn"], implausible)

    def _add_scalars(
        self,
        m: RequestMetrics,
        done: int | None,
        retries: int,
        verdict: Verdict,
        usage: dict[str, Any],
        turn: int | None,
        usage_implausible: bool = False,
    ) -> bool:
        """The request's columns and counts; True when its per-token figures count (measured, ok)."""
        self.tokens_read += m.output_tokens
        measured = not m.warmup
        ok = measured and m.ok
        for col, value in zip(self._seconds_cols, self._seconds_of(m), strict=True):
            col.append(math.nan if value is None else value)
        self._index.append(m.index)
        self._t_send.append(m.t_send_ns)
        self._finish.append(_NO_NS if done is None else done)
        self._measured.append(measured)
        self._ok.append(ok)
        self._cols.commit()
        if not measured:
            return False
        if verdict.cost is not None:
            self.cost_total += verdict.cost
        totals = self.totals
        if not totals.add(
            m, retries=retries, useful=verdict.useful, why_not=verdict.why_not, usage_implausible=usage_implausible
        ):
            return False
        if self.judge.grading.active:
            self.grades.add(
                verdict.grade, useful=verdict.useful, e2e_s=m.e2e_s, output_tokens=m.output_tokens,
                prompt_tokens=m.prompt_tokens, turn=turn,
            )  # fmt: skip
        self.workload.add(usage, turn, m)
        st = m.server_timings
        if st is not None:
            self._server_sources[st["source"]] = self._server_sources.get(st["source"], 0) + 1
            for name, col in self._server.items():
                col.append(math.nan if st[name] is None else st[name])
            self._server_cols.commit()
        return True

    def add_token_figures(self, times_ns: np.ndarray, layout: np.ndarray, kernel_times_ns: np.ndarray) -> None:
        """A measured, successful request's per-token figures: ITL, chunk gaps, kernel lag."""
        if len(times_ns) > 1:  # one event has no ITL sample and no gap
            record_weighted(self._itl, *itl_token_weights_ns(times_ns, layout))
            self._gaps.record_many(np.maximum(1, np.diff(times_ns)))
        if len(kernel_times_ns):
            # A read's kernel stamp can follow pytps's by a few ns on loopback: floor at 1 ns.
            self._kernel_lag.record_many(np.maximum(1, times_ns - kernel_times_ns))

    def token_histograms(self) -> dict[str, bytes]:
        """The per-token histograms as Histogram.to_bytes, to travel to another process."""
        return {"itl": self._itl.to_bytes(), "gaps": self._gaps.to_bytes(), "kernel_lag": self._kernel_lag.to_bytes()}

    def merge_token_histograms(self, blobs: dict[str, bytes]) -> None:
        """Adds another summary's token_histograms(): the merge is exact bucket for bucket."""
        self._itl.merge(_core.Histogram.from_bytes(blobs["itl"]))
        self._gaps.merge(_core.Histogram.from_bytes(blobs["gaps"]))
        self._kernel_lag.merge(_core.Histogram.from_bytes(blobs["kernel_lag"]))

    def _column(self, name: str, ok_only: bool) -> np.ndarray:
        values = self._cols.column(name)
        kept: np.ndarray = values[self._cols.column("ok" if ok_only else "measured").astype(bool)]
        return kept

    def finish(self, events: Iterable[np.ndarray]) -> dict[str, Any]:
        """The summary (keys: docs/results.md), given every request's event rows (event_log.ROW)."""

        def dist(name: str, ok_only: bool = True) -> dict[str, Any]:
            return distribution(self._column(name, ok_only), scratch=True)

        summary: dict[str, Any] = {
            **request_distributions(dist, self._itl, self._gaps),
            "send_overhead_s": dist("send_overhead_s", ok_only=False),
        }
        if self._kernel_lag.count:
            summary["kernel_read_lag_s"] = histogram_distribution(self._kernel_lag)
        ttft, tpot = self._column("ttft_s", True), self._column("tpot_s", True)
        e2e_500 = e2e_for(500, ttft, tpot)  # as request_metrics, element-wise
        del ttft, tpot  # one column at a time: memory at the finish stays a few columns, whatever the run
        summary["e2e_500_s"] = distribution(e2e_500, scratch=True)
        del e2e_500
        if self.rate_mode:
            summary["ttft_sched_s"] = dist("ttft_sched_s")
            summary["e2e_sched_s"] = dist("e2e_sched_s")
            summary["schedule_lag_s"] = dist("schedule_lag_s", ok_only=False)

        ok = self._cols.column("ok").astype(bool)
        index = self._cols.column("index")
        # The requests whose events count (measured, successful), by index; the column then goes.
        counted = np.zeros(int(index.max()) + 1 if len(index) else 0, dtype=bool)
        counted[index[ok]] = True
        del index
        t_send = self._cols.column("t_send")
        finish = self._cols.column("finish")
        measured = self._cols.column("measured").astype(bool)
        finished = finish != _NO_NS

        # The measured window: first measured send to last measured finish (no copies: where=).
        in_window = measured & finished
        t0 = int(t_send.min(where=measured, initial=_INT64_MAX)) if measured.any() else None
        t1 = int(finish.max(where=in_window, initial=_INT64_MIN)) if in_window.any() else None
        totals = self.totals
        window_s = measured_window_s(t0, t1)
        summary.update(totals.figures(window_s))
        done, failed = _finished_per_second(t0, finish, in_window, ok)
        del ok, measured, in_window

        # One pass over the events: tokens per second of the time series, tokens in the steady window.
        # Each column goes as soon as its copy for the steady window is taken, and the copies are
        # sorted in place: the finish's peak is two int64 columns, not six (issue 27's long runs).
        target = self.target_concurrency or 0
        session_start, session_end = self.workload.sessions
        steady: list[tuple[int, int]] = []
        if len(session_start):  # sessions in flight, not requests: think time leaves them idle
            steady = steady_intervals_of(session_start, session_end, target) if target else []
            del t_send, finish
        else:
            everything = bool(finished.all())  # the usual case: the columns themselves, sorted in place
            starts_ns = t_send if everything else t_send[finished]
            del t_send
            ends_ns = finish if everything else finish[finished]
            del finish
            if target:
                starts_ns.sort()
                ends_ns.sort()
                steady = steady_intervals_sorted(starts_ns, ends_ns, target)
            del starts_ns, ends_ns
        del finished
        starts = np.asarray([a for a, _ in steady], dtype=np.int64)
        ends = np.asarray([b for _, b in steady], dtype=np.int64)
        per_second = np.zeros(0, dtype=np.int64)
        steady_tokens = 0
        for rows in events:
            rows = rows[counted[rows["request_index"]]] if len(counted) else rows[:0]
            if not len(rows) or t0 is None:
                continue
            t = rows["t_ns"]
            tokens = rows["layout"].astype(np.int64)
            secs = (t - t0) // NS_PER_S
            after = secs >= 0
            if after.any():
                per_second = _add_bins(per_second, np.bincount(secs[after], weights=tokens[after]).astype(np.int64))
            if steady:
                idx = np.searchsorted(starts, t, side="right") - 1
                inside = (idx >= 0) & (t <= ends[np.clip(idx, 0, None)])
                steady_tokens += int(tokens[inside].sum())
        steady_len = sum(b - a for a, b in steady)
        self.steady_intervals = steady  # the server metrics' steady window (measure/server_metrics)
        summary["steady_window_s"] = steady_len / NS_PER_S if steady else None
        # Whole bodies have no token events to place in the window: not measured, not zero.
        streams = totals.streamed > 0
        summary["steady_output_throughput_tps"] = (
            steady_tokens / (steady_len / NS_PER_S) if steady_len and streams else None
        )

        judge = self.judge
        prices = judge.prices
        if prices is not None:
            n, tokens, useful = totals.requests, totals.tokens_ok, totals.useful
            summary["cost"] = {
                "currency": prices.currency,
                "total": self.cost_total,
                "per_request": self.cost_total / n if n else None,
                "per_million_output_tokens": self.cost_total / tokens * 1e6 if tokens else None,
                "per_useful_response": self.cost_total / useful if useful else None,
            }
        if judge.grading.active:
            summary["grading"] = self.grades.figures(window_s, self.cost_total if prices is not None else None)
        if judge.slo_run:
            checks = evaluate_run(judge.slo_run, summary)
            summary["slo_run"] = {"checks": checks, "met": all(c["met"] for c in checks)}
        summary["server_timings"] = self._server_summary()
        summary["first_ttft_s"] = totals.first_ttft_s
        time_series = _time_series(per_second, done, failed)
        del counted
        summary.update(self.workload.finish())
        summary["time_series"] = time_series
        return summary

    def _server_summary(self) -> dict[str, Any] | None:
        """The server's own timings beside pytps's (docs/metrics.md, "Server-reported timings"),
        over successful measured requests that reported them; None when none did."""
        sources = self._server_sources
        if not sources:
            return None
        out: dict[str, Any] = {
            "source": next(iter(sources)) if len(sources) == 1 else "mixed",
            "sources": dict(sources),
            "requests": sum(sources.values()),
        }
        for name in self._server:
            out[name] = distribution(self._server_cols.column(name), scratch=True)
        return out

    def close(self) -> None:
        """Removes the spilled columns' files (after finish())."""
        for cols in (self._cols, self._server_cols, self.workload.columns):
            cols.close()


def _beside(path: Path | None, part: str) -> Path | None:
    """The file of another group of spilled columns, beside `path`."""
    return None if path is None else path.with_name(f"{path.stem}-{part}{path.suffix}")


def record_weighted(hist: Any, values: np.ndarray, counts: np.ndarray) -> None:
    """Records each value `count` times: one call for the values of count 1 (nearly all, one token
    per event), one per value otherwise, so the cost follows the events, never the counts."""
    single = counts == 1
    hist.record_many(values[single])
    for value, count in zip(values[~single].tolist(), counts[~single].tolist(), strict=True):
        if count > 0:
            hist.record(value, count)


def _finished_per_second(
    t0: int | None, finish_ns: np.ndarray, counted: np.ndarray, ok: np.ndarray, block: int = 1 << 18
) -> tuple[np.ndarray, np.ndarray]:
    """Requests finished and failed in each whole second since t0, of the `counted` ones (a block
    of rows at a time: no copy of the column)."""
    done = np.zeros(0, dtype=np.int64)
    failed = np.zeros(0, dtype=np.int64)
    if t0 is None:
        return done, failed
    for a in range(0, len(finish_ns), block):
        sel = counted[a : a + block]
        secs = (finish_ns[a : a + block][sel] - t0) // NS_PER_S
        good = ok[a : a + block][sel]
        keep = secs >= 0
        done = _add_bins(done, np.bincount(secs[keep & good]))
        failed = _add_bins(failed, np.bincount(secs[keep & ~good]))
    return done, failed


def _add_bins(total: np.ndarray, more: np.ndarray) -> np.ndarray:
    if len(more) > len(total):
        more[: len(total)] += total
        return more
    total[: len(more)] += more
    return total


def _time_series(tokens_per_second: np.ndarray, done: np.ndarray, failed: np.ndarray) -> list[dict[str, Any]]:
    """Per whole second since the first measured send: tokens arrived, requests finished, errors."""
    last = max(_last_nonzero(tokens_per_second), _last_nonzero(done), _last_nonzero(failed))

    def at(a: np.ndarray, s: int) -> int:
        return int(a[s]) if s < len(a) else 0

    return [
        {"t_s": s, "output_tokens": at(tokens_per_second, s), "requests_done": at(done, s), "errors": at(failed, s)}
        for s in range(last + 1)
    ]


def _last_nonzero(a: np.ndarray) -> int:
    nz = np.flatnonzero(a)
    return int(nz[-1]) if len(nz) else -1


def summarize(
    records: Sequence[RequestRecord], *, target_concurrency: int | None = None, rate_mode: bool = False
) -> tuple[dict[str, Any], list[RequestMetrics]]:
    """The summary of records held in memory (a run keeps none: it streams them through RunSummary),
    and their per-request scalars."""
    acc = RunSummary(target_concurrency=target_concurrency, rate_mode=rate_mode)
    per_request = []
    rows = []
    for rec in records:
        m = request_metrics(rec)
        layout = event_tokens(rec, m.output_tokens)
        acc.add(rec, m, layout)
        per_request.append(m)
        rows.append(event_rows(rec, layout))
    return acc.finish(rows), per_request
