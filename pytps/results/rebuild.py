"""A results folder whose run never finished (killed, out of power, a corrupt results.json) is
still a result: its summary rebuilt from the journal (requests.jsonl) and the event log
(events.log, or events.npz) with the same code as a run's finish (RunSummary.add_journaled, its
add_token_figures per request, RunSummary.finish over the events). docs/results.md, "A run that
did not finish".
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.event_rows import ROW
from pytps.measure.metrics import token_layout
from pytps.measure.server_metrics.summary import add_to_summary as add_server_metrics
from pytps.measure.summary import RunSummary
from pytps.results.event_log import read_chunks, write_npz
from pytps.results.files import EVENT_LOG, EVENTS, JOURNAL, RESULTS, SCRAPES
from pytps.results.folder import SCHEMA_VERSION, journal_lines, write_json_atomic


def read_results(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(results.json's content, None), or (None, why it cannot be used) for a missing or corrupt one."""
    file = path / RESULTS
    if not file.is_file():
        return None, "it has no results.json"
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, OSError) as exc:
        return None, f"its results.json is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return None, "its results.json is not a results object"
    return data, None


def add_request_rows(summary: RunSummary, rows: np.ndarray) -> None:
    """One request's event rows (event_log.ROW) as its per-token figures, as a live run adds them."""
    kernel = rows["t_kernel_ns"]
    summary.add_token_figures(
        np.ascontiguousarray(rows["t_ns"]),
        np.ascontiguousarray(rows["layout"]).astype(np.int64),
        np.ascontiguousarray(kernel) if (kernel >= 0).all() else np.zeros(0, dtype=np.int64),
    )


def add_token_figures_from_rows(summary: RunSummary, chunks: Iterable[np.ndarray], counted: np.ndarray) -> None:
    """Per-token figures of the requests in `counted` (measured, successful) from event rows in
    chunks: each request's rows are contiguous (one write per request), possibly split across two
    chunks."""
    add_token_figures_by_request(summary, (chunk[np.isin(chunk["request_index"], counted)] for chunk in chunks))


def add_token_figures_by_request(summary: RunSummary, chunks: Iterable[np.ndarray]) -> None:
    """Per-token figures of every request in chunks of event rows (already the ones that count),
    a request at a time: its rows are contiguous, possibly split across two chunks."""
    pending = np.zeros(0, dtype=ROW)
    for chunk in chunks:
        rows = np.concatenate((pending, chunk)) if len(pending) else chunk
        if not len(rows):
            continue
        # Every request but the last of this chunk is whole; the last may go on in the next.
        starts = np.flatnonzero(np.r_[True, rows["request_index"][1:] != rows["request_index"][:-1]])
        bounds = [*starts.tolist(), len(rows)]
        for a, b in itertools.pairwise(bounds[:-1]):
            add_request_rows(summary, rows[a:b])
        pending = rows[bounds[-2] :]
    if len(pending):
        add_request_rows(summary, pending)


def _npz_rows(npz: Path, tokens_of: dict[int, int]) -> np.ndarray:
    """events.npz as event-log rows, each request's layout recomputed from its saved columns and
    its journaled output tokens (metrics.token_layout, as the live run laid it out)."""
    with np.load(npz) as data:
        cols = {k: np.asarray(data[k]) for k in data.files}
    n = len(cols["t_ns"])
    rows = np.zeros(n, dtype=ROW)
    for name in ("request_index", "t_ns", "kind", "tokens", "chars"):
        rows[name] = cols[name]
    rows["t_kernel_ns"] = cols.get("t_kernel_ns", -1)
    order = np.argsort(rows["request_index"], kind="stable")
    rows = rows[order]
    idx = rows["request_index"]
    starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]]) if n else np.zeros(0, dtype=np.int64)
    for a, b in itertools.pairwise([*starts.tolist(), n]):
        tokens = tokens_of.get(int(idx[a]), b - a)
        rows["layout"][a:b] = token_layout(b - a, rows["tokens"][a:b], tokens)
    return rows


def event_chunks(path: Path, tokens_of: dict[int, int]) -> list[np.ndarray] | Iterator[np.ndarray]:
    """The folder's event rows: events.log in pieces, else events.npz, else none."""
    log = path / EVENT_LOG
    if log.exists():
        return read_chunks(log)
    npz = path / EVENTS
    if npz.exists():
        return [_npz_rows(npz, tokens_of)]
    return []


def rebuild_summary(path: Path, metadata: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """(the summary, journaled requests) of the folder's journal and events, as the run's finish
    would have written it. The load plan comes from the metadata when it is known."""
    load = metadata.get("load") or {}
    rate_mode = load.get("mode") == "rate"
    target = load.get("concurrency") if load.get("mode") == "concurrency" else load.get("max_concurrency")
    summary = RunSummary(target_concurrency=target, rate_mode=rate_mode)
    counted: list[int] = []
    tokens_of: dict[int, int] = {}
    lines = 0
    every_token = 0  # every request's, warm-up and failed ones included: the server metrics' cross-check
    for line in journal_lines(path):
        summary.add_journaled(line)
        lines += 1
        every_token += int(line.get("output_tokens") or 0)
        if line.get("ok") and not line.get("warmup"):
            counted.append(int(line["index"]))
            tokens_of[int(line["index"])] = int(line.get("output_tokens") or 0)
    counted_arr = np.asarray(counted, dtype=np.int64)
    add_token_figures_from_rows(summary, event_chunks(path, tokens_of), counted_arr)
    out = summary.finish(event_chunks(path, tokens_of))
    # The scrapes of --server-metrics, as the run's finish reads them.
    add_server_metrics(out, path / SCRAPES, summary.steady_intervals, every_token)
    return out, lines


def load_or_rebuild(path: Path) -> tuple[dict[str, Any], str | None]:
    """(results.json's content, None) for a finished run; for one that did not finish (no summary,
    a missing or corrupt results.json) and has a journal, results with the summary rebuilt and a
    note that says so. A folder with neither raises FileNotFoundError naming what is missing."""
    results, why = read_results(path)
    if results is not None and results.get("summary") is not None:
        return results, None
    if not (path / JOURNAL).is_file():
        raise FileNotFoundError(
            f"{path}: {why or 'its run did not finish'} and it has no requests.jsonl to rebuild from"
        )
    metadata: dict[str, Any] = (results or {}).get("metadata") or {}
    summary, lines = rebuild_summary(path, metadata)
    if why is None or why.endswith("no results.json"):
        cause = "the run did not finish" + ("" if why is None else " (no results.json)")
    else:
        cause = why.removeprefix("its ")
    note = f"{cause}: summary rebuilt from {lines:,} journaled requests"
    rebuilt = {**(results or {}), "metadata": metadata, "summary": summary}
    rebuilt.setdefault("schema_version", SCHEMA_VERSION)
    rebuilt.setdefault("envelope", None)
    rebuilt["rebuilt"] = note
    return rebuilt, note


def load_saved(directory: str | Path, need_journal: bool) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    """(path, results, journal lines) of a results folder, the summary rebuilt when its run did not
    finish; a one-line ConfigError naming what is missing. No journal is an empty one unless
    `need_journal`. What every report of saved runs reads (compare, --html)."""
    from pytps.errors import ConfigError

    p = Path(directory)
    has_journal = (p / JOURNAL).is_file()
    if not has_journal and not (p / RESULTS).is_file():
        raise ConfigError(f"{p} has no results.json: name a directory written by pytps run")
    if need_journal and not has_journal:
        raise ConfigError(f"{p} has no requests.jsonl: its per-request figures are needed here")
    try:
        results, _ = load_or_rebuild(p)
    except FileNotFoundError as exc:
        raise ConfigError(f"{exc}: name a directory written by pytps run") from None
    return p, results, list(journal_lines(p)) if has_journal else []


def repair(path: Path) -> str:
    """Writes the rebuilt results.json and events.npz of a run that did not finish (pytps report
    --repair); the note that says what was rebuilt, or that nothing needed to be."""
    results, note = load_or_rebuild(path)
    if note is None:
        return "nothing to repair: the run finished"
    results.pop("rebuilt", None)
    results.setdefault("metadata", {})["repaired"] = note
    write_json_atomic(path / RESULTS, results)
    log = path / EVENT_LOG
    if log.exists():
        kernel = any(bool((rows["t_kernel_ns"] >= 0).any()) for rows in read_chunks(log))
        write_npz(log, path / EVENTS, kernel_stamps=kernel)
        log.unlink()
    return note
