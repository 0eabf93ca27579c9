"""A run's results folder: its metadata, what is written as each request finishes (the journal,
the event log) and what is written when the run ends, also after Ctrl-C (results.json, events.npz;
schema: docs/results.md), and the RunResult handed back to the caller.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.measure.envelope import run_verdict
from pytps.measure.metrics import RequestMetrics, client_cpu_us_per_token, measure
from pytps.measure.records import RequestRecord
from pytps.measure.slo import Judge, Verdict
from pytps.measure.summary import RunSummary
from pytps.results.event_log import EventLog, read_chunks, write_npz
from pytps.results.files import EVENT_LOG, EVENTS, JOURNAL, RESULTS, SCRAPES, SPILL
from pytps.results.folder import (
    GRADING_DONE,
    GRADING_PENDING,
    SCHEMA_VERSION,
    VERDICT_FIELDS,
    Journal,
    write_json_atomic,
)

if TYPE_CHECKING:
    from pytps.results.record import Record


@dataclass(repr=False)
class RunResult:
    out_dir: Path
    metadata: dict[str, Any]
    summary: dict[str, Any]
    records: list[RequestRecord]
    interrupted: bool = False
    stopped_reason: str | None = None
    envelope: dict[str, Any] | None = None  # the trust envelope and this run's verdict (results.json)

    def __repr__(self) -> str:
        # Short on purpose: asyncio formats a finished task's result with repr (on Python 3.11
        # even on every signal.getsignal), and the records' arrays are large.
        return f"<RunResult {self.summary.get('requests_total')} requests in {self.out_dir}>"

    @property
    def requests(self) -> Iterator[Record]:
        """Each request's line of requests.jsonl as a pytps.Record (attributes, as_dict()), read
        from the journal as iterated: a long run's requests are never all in memory."""
        from pytps.results.folder import journal_lines
        from pytps.results.record import Record

        for fields in journal_lines(self.out_dir):
            yield Record(fields=fields)

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Copies the results folder (results.json, requests.jsonl, events.npz) to `directory`,
        created if needed; returns it. The run's own folder stays."""
        target = Path(directory)
        if target.resolve() != self.out_dir.resolve():
            shutil.copytree(self.out_dir, target, dirs_exist_ok=True)
        return target


def default_out_dir(model: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in model)[:60]
    return Path("results") / f"{stamp}-{safe}"


def write_results(
    out_dir: Path, metadata: dict[str, Any], summary: dict[str, Any] | None, envelope: dict[str, Any] | None = None
) -> None:
    """results.json, whole or not at all (docs/results.md). envelope: the trust envelope with this
    run's verdict (pytps.calibrate.run_verdict), None without a saved one."""
    write_json_atomic(
        out_dir / RESULTS,
        {"schema_version": SCHEMA_VERSION, "metadata": metadata, "summary": summary, "envelope": envelope},
    )


class RunOutput:
    """A run's results folder while the run goes. Each finished request goes, at once and at a
    cost that does not grow with the run, to the journal (its scalars), the event log (its events)
    and the summary (compact columns and histograms); nothing per request is held until the end
    unless keep_records asks for the records themselves (a library user who wants them)."""

    def __init__(
        self,
        out_dir: Path,
        *,
        slots: int | None,
        rate_mode: bool,
        judge: Judge | None = None,
        keep_records: bool = False,
    ) -> None:
        """slots: the load plan's number of requests in flight (LoadPlan.max_in_flight, None:
        unbounded); rate_mode: an open loop (the summary's target concurrency reads both)."""
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.journal = Journal(out_dir / JOURNAL)
        self.events = EventLog(out_dir / EVENT_LOG)
        self.judge = judge or Judge()
        # The summary's per-request columns go to a scratch file beside the event log, a block at a
        # time, so memory does not grow with the run (pytps.measure.columns).
        self.summary = RunSummary(
            target_concurrency=slots, rate_mode=rate_mode, judge=self.judge, spill_path=out_dir / SPILL
        )
        self.records: list[RequestRecord] | None = [] if keep_records else None
        # Requests journaled while their answers are graded: their measurement, kept for add().
        self._pending: dict[int, tuple[RequestMetrics, Any]] = {}
        self.finished = 0
        # None: each request's lines are flushed to the OS as it is added; else the event loop's
        # call_soon, and they are flushed once per turn of the loop (flush_each_turn).
        self._call_soon: Callable[[Callable[[], None]], object] | None = None
        self._flush_due = False
        # Every request's output tokens, warm-up and failures included: the server metrics' scrapes
        # bracket them all (the token cross-check, joules per output token).
        self.all_output_tokens = 0

    def flush_each_turn(self, call_soon: Callable[[Callable[[], None]], object]) -> None:
        """Flushes the journal and the event log once per turn of the event loop whose call_soon
        this is, for every request added in that turn, instead of once per request (two write
        calls per request were ~5% of a short request's client CPU, issue 42). Only for a
        RunOutput fed from that loop's thread.

        A measurement already taken is still never lost, and its loss window is not wider: the
        requests that finish in one turn are woken together (the transport hands over a batch of
        finished requests at once), and with a flush per request the batch's last line reached
        the OS only when the turn had done the work of every request before it. The flush is
        queued at the turn's first add, so it runs before any callback queued after it, i.e.
        before the loop takes in the next batch of finished requests: no line waits longer than
        its batch's last one did. A line still reaches the file when the run ends, however it
        ends: the runner flushes on every way out of its load (an exception's included), finish()
        closes both files, and the interpreter flushes open files at exit; only the process's
        sudden death (SIGKILL) loses the turn's lines, as it did the one line being written.
        tests/results/test_flush_each_turn.py holds it to this."""
        self._call_soon = call_soon

    def _written(self) -> None:
        if self._call_soon is None:
            self.flush()
        elif not self._flush_due:
            self._flush_due = True
            self._call_soon(self.flush)

    def flush(self) -> None:
        """Every line and event row added so far, to the OS."""
        self._flush_due = False
        self.journal.flush()
        self.events.flush()

    def _scalars(self, rec: RequestRecord, m: RequestMetrics, verdict: Verdict) -> dict[str, Any]:
        # as_fields: the journal writes them out and keeps none (as_dict's copies cost a short request ~2%)
        scalars = m.as_fields()
        scalars["useful"], scalars["why_not_useful"], scalars["cost"] = verdict.useful, verdict.why_not, verdict.cost
        if rec.grade is not None:
            scalars.update(rec.grade.journal_fields(self.judge.keep_text))
        return scalars

    def journal_pending(self, rec: RequestRecord) -> None:
        """A request whose timing has ended and whose answer waits for its grader: journaled now
        ("grading": "pending", rec.grade the placeholder), so a run stopped while it is graded
        still has it. add() appends its verdict line later."""
        m, layout = measure(rec)
        scalars = self._scalars(rec, m, self.judge.verdict(rec, m))
        if self.judge.keep_text:
            scalars["answer_text"] = rec.text
            scalars["reasoning_text"] = rec.reasoning_text
        scalars["grading"] = GRADING_PENDING
        self.journal.append(rec, scalars)
        self.events.append(rec, layout)
        self._written()
        self._pending[rec.index] = (m, layout)

    def add(self, rec: RequestRecord, grading: str = GRADING_DONE) -> RequestMetrics:
        """A finished request, graded when it has a reference. One journaled as pending gets its
        verdict line (grading: "graded", or "stopped" when the run ended first)."""
        pending = self._pending.pop(rec.index, None)
        m, layout = pending if pending is not None else measure(rec)
        verdict = self.judge.verdict(rec, m)
        scalars = self._scalars(rec, m, verdict)
        if pending is not None:
            fields = {k: scalars[k] for k in VERDICT_FIELDS if k in scalars}
            if self.judge.keep_text and rec.grade is not None:
                fields["extracted_answer"] = rec.grade.extracted
            self.journal.append_verdict(rec.index, {**fields, "grading": grading})
        else:
            if self.judge.keep_text:  # --keep-text: what a grader saw (the answer), and the reasoning beside it
                scalars["answer_text"] = rec.text
                scalars["reasoning_text"] = rec.reasoning_text
            self.journal.append(rec, scalars)
            self.events.append(rec, layout)
        self._written()
        self.summary.add(rec, m, layout, verdict)
        self.all_output_tokens += m.output_tokens
        if self.records is not None:
            self.records.append(rec)
        self.finished += 1
        return m

    def add_batch(self, records: list[RequestRecord]) -> list[RequestMetrics]:
        """add() of each record (none journaled as pending), a stage at a time over the batch:
        every record measured, then judged, then journaled, then its events logged, then counted
        in the summary. The same lines, rows and columns, in the same order, as add() one by one;
        a stage over a batch keeps its code in the CPU's caches (issue 42). A subclass that
        changes add() (a scale worker's, which shifts a skewed clock's records) gets add() of each."""
        if self._pending or self.judge.keep_text or type(self).add is not RunOutput.add:
            return [self.add(rec) for rec in records]
        measured = [measure(rec) for rec in records]
        verdict = self.judge.verdict
        verdicts = [verdict(rec, m) for rec, (m, _) in zip(records, measured, strict=True)]
        journal, events, summary, records_kept = self.journal, self.events, self.summary, self.records
        for rec, (m, _), v in zip(records, measured, verdicts, strict=True):
            journal.append(rec, self._scalars(rec, m, v))
        for rec, (_, layout) in zip(records, measured, strict=True):
            events.append(rec, layout)
        self._written()
        for rec, (m, layout), v in zip(records, measured, verdicts, strict=True):
            summary.add(rec, m, layout, v)
            self.all_output_tokens += m.output_tokens
        if records_kept is not None:
            records_kept.extend(records)
        self.finished += len(records)
        return [m for m, _ in measured]

    def finish(self, metadata: dict[str, Any], envelope: dict[str, Any] | None = None) -> RunResult:
        """Summary, results.json and events.npz from whatever was measured: also after Ctrl-C.
        envelope: the saved trust envelope of this host and transport (pytps calibrate), if any."""
        self.journal.close()
        self.events.close()
        log = self.out_dir / EVENT_LOG
        summary = self.summary.finish(read_chunks(log))
        self.summary.close()
        cpu = metadata.get("client_cpu")
        per_token = client_cpu_us_per_token(cpu, self.summary.tokens_read) if cpu else None
        if per_token is not None:
            summary["client_cpu_us_per_token"] = per_token
        scrapes = self.out_dir / SCRAPES
        if scrapes.exists():  # --server-metrics: its parser and figures are loaded only then
            from pytps.measure.server_metrics.summary import add_to_summary as add_server_metrics

            add_server_metrics(summary, scrapes, self.summary.steady_intervals, self.all_output_tokens)
        verdict = run_verdict(envelope, metadata, summary)
        write_results(self.out_dir, metadata, summary, verdict)
        write_npz(log, self.out_dir / EVENTS, kernel_stamps=self.events.kernel_stamps)
        log.unlink()
        return RunResult(
            out_dir=self.out_dir, metadata=metadata, summary=summary, records=self.records or [], envelope=verdict
        )
