"""The exact merge of a scaled run: the workers' results folders made into one, as if a single
process had measured everything (docs/scale.md, "The merge").

- Per-request figures come from the workers' journals, value for value: each line goes to the
  merged journal and to one RunSummary (RunSummary.add_journaled), so request-level percentiles
  are exact, as in one process.
- Per-token figures (ITL, chunk gaps, kernel lag) come as each worker's histograms
  (Histogram.to_bytes) and are merged bucket for bucket; a worker that died sent none, so its
  histograms are rebuilt from its event log, with the same code as a live run's.
- Every absolute time (journal and event log) is moved onto the driver's clock by the worker's
  measured offset, so throughput, the windows and the time series have one time base.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.metrics import client_cpu_us_per_token
from pytps.measure.records import ABSOLUTE_TIMES
from pytps.measure.server_metrics.summary import add_to_summary as add_server_metrics
from pytps.measure.slo import Judge
from pytps.measure.summary import RunSummary
from pytps.results.event_log import read_chunks, write_npz
from pytps.results.files import EVENT_LOG, EVENTS, JOURNAL, SCRAPES
from pytps.results.folder import journal_lines
from pytps.results.output import RunResult, write_results
from pytps.results.rebuild import add_token_figures_by_request
from pytps.runner.schedule import LoadPlan


@dataclass
class MergePart:
    """One worker's results folder, its clock offset, and its histograms (None: rebuild them)."""

    worker: int
    directory: Path
    offset_ns: int
    histograms: dict[str, bytes] | None


def _journal(part: MergePart, parts: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(finish on the driver's clock, worker, line) of a worker's journal, in its order (which
    is finish order); a torn last line (the worker died mid-write) is left out. Connection ids,
    numbered by each worker's transport, become unique within the run: id × parts + worker."""
    if not (part.directory / JOURNAL).exists():
        return
    for line in journal_lines(part.directory):
        for name in ABSOLUTE_TIMES:
            if line.get(name) is not None:
                line[name] += part.offset_ns
        if line.get("connection_id") is not None:
            line["connection_id"] = line["connection_id"] * parts + part.worker
        done = line["end_ns"] if line["end_ns"] is not None else line["t_done_ns"]
        yield (done if done is not None else line["t_send_ns"]), part.worker, line


def _shifted_rows(part: MergePart, known: np.ndarray) -> Iterator[np.ndarray]:
    """A worker's event rows on the driver's clock, only of requests its journal has."""
    log = part.directory / EVENT_LOG
    if not log.exists():
        return
    for chunk in read_chunks(log):
        rows = chunk[np.isin(chunk["request_index"], known)].copy()
        rows["t_ns"] += part.offset_ns
        stamped = rows["t_kernel_ns"] >= 0
        rows["t_kernel_ns"][stamped] += part.offset_ns
        yield rows


def merge_results(
    out_dir: Path, parts: list[MergePart], *, plan: LoadPlan, judge: Judge, metadata: dict[str, Any]
) -> RunResult:
    """results.json, requests.jsonl and events.npz of the whole run in out_dir, from the parts."""
    target = plan.max_in_flight
    summary = RunSummary(target_concurrency=target, rate_mode=plan.mode == "rate", judge=judge)
    # Every request's output tokens, warm-up and failures included: what the server metrics' scrapes
    # bracket (the token cross-check, joules per output token), as in one process's run.
    all_output_tokens = 0
    known: dict[int, list[int]] = {p.worker: [] for p in parts}
    counted: dict[int, list[int]] = {p.worker: [] for p in parts}
    with open(out_dir / JOURNAL, "w", encoding="utf-8") as journal:
        for _, worker, line in heapq.merge(*(_journal(p, len(parts)) for p in parts), key=lambda t: (t[0], t[1])):
            journal.write(json.dumps(line, separators=(",", ":")) + "\n")
            summary.add_journaled(line)
            all_output_tokens += line.get("output_tokens") or 0
            known[worker].append(line["index"])
            if line["ok"] and not line["warmup"]:
                counted[worker].append(line["index"])
    log = out_dir / EVENT_LOG
    kernel_stamps = False
    with open(log, "wb") as f:
        for part in parts:
            for rows in _shifted_rows(part, np.asarray(known[part.worker], dtype=np.int64)):
                kernel_stamps |= bool((rows["t_kernel_ns"] >= 0).any())
                f.write(rows.tobytes())
            if part.histograms is not None:
                summary.merge_token_histograms(part.histograms)
            else:
                # A dead worker's per-token histograms, from its event log.
                add_token_figures_by_request(
                    summary, _shifted_rows(part, np.asarray(counted[part.worker], dtype=np.int64))
                )
    result = summary.finish(read_chunks(log))
    cpu = metadata.get("client_cpu")
    per_token = client_cpu_us_per_token(cpu, summary.tokens_read) if cpu else None
    if per_token is not None:
        result["client_cpu_us_per_token"] = per_token
    add_server_metrics(result, out_dir / SCRAPES, summary.steady_intervals, all_output_tokens)
    from pytps.calibrate.envelope import load_envelope
    from pytps.measure.envelope import run_verdict

    # The whole run against this host's envelope, as one process's would be (its concurrency is the
    # run's, not a worker's share: the stricter reading).
    envelope = run_verdict(load_envelope(str(metadata.get("transport"))), metadata, result)
    write_results(out_dir, metadata, result, envelope)
    write_npz(log, out_dir / EVENTS, kernel_stamps=kernel_stamps)
    log.unlink()
    return RunResult(out_dir=out_dir, metadata=metadata, summary=result, records=[], envelope=envelope)
