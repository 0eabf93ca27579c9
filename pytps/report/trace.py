"""`pytps report DIR --trace FILE`: a saved run as a Chrome trace (the Trace Event Format's JSON
object form), for chrome://tracing and Perfetto's UI. docs/trace.md describes the layout.

Read from the run's files only (results.json, requests.jsonl, events.npz, or events.log of a run
killed before events.npz was written), never from a live run.

Layout: the run is one process; each connection is one thread (a track), named by the journal's
connection_id. On it, each request is a complete event ("X") with its phases nested inside:
connect, tls and send (placed back to back so that send ends at t_send: the journal keeps their
durations, not their starts), then TTFT (t_send to the first output event), with wait_headers
(t_send to the response head) inside it, and decode (first to last output event). Each output
event is an instant event ("i", thread scope) carrying its token count and kind.

Timestamps are microseconds (floats, ns precision) after the start of the run's first request
(its connect when it opened a connection, else its send), so none is negative; the metadata
gives that origin as a CLOCK_MONOTONIC ns stamp. Requests that share a track must not overlap
(the viewers nest slices on one thread by time): requests with no connection id (a connect that
failed, a run saved before schema 5) and requests multiplexed on one HTTP/2 connection go on
extra lanes of their own, each a track named after what it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from pytps.errors import ConfigError
from pytps.results.event_log import load_saved_events
from pytps.results.files import JOURNAL
from pytps.results.folder import load_journal
from pytps.results.rebuild import read_results

#: Requests written by default; a longer run is sampled evenly by request index.
DEFAULT_MAX_REQUESTS = 10_000

#: pytps.KIND_* (csrc/core: stream recorder) by value: kept here so a report needs no native build.
KIND_NAMES = {0: "content", 1: "reasoning", 2: "tool"}

PID = 1  # the run

# The phases placed before t_send, in the order they happen.
_BEFORE_SEND = ("connect", "tls", "send")


@dataclass
class _Span:
    line: dict[str, Any]
    start_ns: int
    end_ns: int
    tid: int = 0


@dataclass
class _Lane:
    name: str
    sort: int
    end_ns: int = -(1 << 62)
    spans: list[_Span] = field(default_factory=list)


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _phases(line: dict[str, Any]) -> dict[str, int]:
    raw = line.get("phases_ns") or {}
    return {k: int(v) for k, v in raw.items() if isinstance(v, (int, float)) and v >= 0}


def _span(line: dict[str, Any], event_times: np.ndarray | None) -> _Span:
    t_send = int(line["t_send_ns"])
    phases = _phases(line)
    start = t_send - sum(phases.get(p, 0) for p in _BEFORE_SEND)
    ends = [t_send]
    for key in ("t_headers_ns", "first_output_ns", "last_output_ns", "end_ns", "t_done_ns"):
        t = _int_or_none(line.get(key))
        if t is not None:
            ends.append(t)
    if event_times is not None and len(event_times):
        ends.append(int(event_times.max()))
    if "wait_headers" in phases:
        ends.append(t_send + phases["wait_headers"])
    return _Span(line, start, max(ends))


def select_lines(lines: list[dict[str, Any]], max_requests: int) -> tuple[list[dict[str, Any]], bool]:
    """At most max_requests journal lines, spread evenly over the run by request index; and
    whether any was left out."""
    if max_requests < 1:
        raise ConfigError(f"--trace-max-requests must be >= 1, got {max_requests}")
    if len(lines) <= max_requests:
        return lines, False
    ordered = sorted(lines, key=lambda line: int(line["index"]))
    picks = np.unique(np.linspace(0, len(ordered) - 1, max_requests).round().astype(np.int64))
    return [ordered[int(i)] for i in picks], True


def _lanes(spans: list[_Span]) -> list[_Lane]:
    """Tracks: one per connection id (more for one that carried overlapping requests, as HTTP/2
    does), then lanes for requests with no connection id. Sets each span's tid."""
    by_conn: dict[int | None, list[_Span]] = {}
    for s in spans:
        by_conn.setdefault(_int_or_none(s.line.get("connection_id")), []).append(s)
    lanes: list[_Lane] = []
    keys = sorted(k for k in by_conn if k is not None) + ([None] if None in by_conn else [])
    for key in keys:
        mine: list[_Lane] = []
        for s in sorted(by_conn[key], key=lambda s: (s.start_ns, s.end_ns)):
            lane = next((lane for lane in mine if lane.end_ns <= s.start_ns), None)
            if lane is None:
                if key is None:
                    name = f"no connection id, lane {len(mine) + 1}"
                else:
                    name = f"connection {key}" + (f" (overlapping requests, lane {len(mine) + 1})" if mine else "")
                lane = _Lane(name, len(lanes) + 1)
                mine.append(lane)
                lanes.append(lane)
            lane.end_ns = s.end_ns
            s.tid = lane.sort
            lane.spans.append(s)
    return lanes


def _us(t_ns: int, origin_ns: int) -> float:
    return round((t_ns - origin_ns) / 1000.0, 3)


def _slice(
    name: str, cat: str, start_ns: int, end_ns: int, tid: int, origin: int, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": _us(start_ns, origin),
        "dur": round(max(end_ns - start_ns, 0) / 1000.0, 3),
        "pid": PID,
        "tid": tid,
        "args": args,
    }


def _request_events(s: _Span, origin: int) -> Iterator[dict[str, Any]]:
    """The request's slice and its phases' slices, each clamped into its parent so that they nest."""
    line = s.line
    t_send = int(line["t_send_ns"])
    phases = _phases(line)
    index = int(line["index"])
    error = line.get("error")
    name = f"request {index}" + (f" ({error})" if error else "") + (" [warm-up]" if line.get("warmup") else "")
    keys = (
        "index",
        "warmup",
        "ok",
        "error",
        "status",
        "connection_id",
        "output_tokens",
        "output_events",
        "ttft_s",
        "tpot_s",
        "e2e_s",
        "decode_tps",
        "retries",
        "finish_reason",
        "error_detail",
    )
    args = {k: line.get(k) for k in keys if k in line}
    args["phases_ns"] = phases
    yield _slice(name, "request", s.start_ns, s.end_ns, s.tid, origin, args)

    def child(label: str, a: int, b: int, lo: int, hi: int, extra: dict[str, Any]) -> dict[str, Any] | None:
        a, b = max(a, lo), min(b, hi)
        if b < a:
            return None
        return _slice(label, "phase", a, b, s.tid, origin, {"request": index, "dur_ns": b - a, **extra})

    t = s.start_ns
    for p in _BEFORE_SEND:
        if p in phases:
            ev = child(p, t, t + phases[p], s.start_ns, t_send, {})
            t += phases[p]
            if ev is not None:
                yield ev
    first = _int_or_none(line.get("first_output_ns"))
    last = _int_or_none(line.get("last_output_ns"))
    ttft_end = first if first is not None else s.end_ns
    if first is not None:
        ev = child("TTFT", t_send, first, t_send, s.end_ns, {"ttft_s": line.get("ttft_s")})
        if ev is not None:
            yield ev
    headers = _int_or_none(line.get("t_headers_ns"))
    wait_end = t_send + phases["wait_headers"] if "wait_headers" in phases else headers
    if wait_end is not None:
        ev = child("wait_headers", t_send, wait_end, t_send, ttft_end, {})
        if ev is not None:
            yield ev
    if first is not None and last is not None:
        ev = child(
            "decode",
            first,
            last,
            first,
            s.end_ns,
            {"tpot_s": line.get("tpot_s"), "decode_tps": line.get("decode_tps")},
        )
        if ev is not None:
            yield ev


def trace_events(
    directory: str | Path, max_requests: int = DEFAULT_MAX_REQUESTS
) -> tuple[Iterator[dict[str, Any]], dict[str, Any]]:
    """The trace's events (in file order: metadata events, then each track's slices and
    instants) and its metadata object."""
    path = Path(directory)
    if not (path / JOURNAL).exists():
        raise ConfigError(f"{path} has no requests.jsonl: name a directory written by pytps run")
    # A run that did not finish (no or a corrupt results.json) still has its journal and events.
    results = read_results(path)[0] or {}
    lines = [line for line in load_journal(path) if isinstance(line.get("t_send_ns"), int)]
    total = len(lines)
    lines, sampled = select_lines(lines, max_requests) if lines else (lines, False)
    events = load_saved_events(path)
    per_request: dict[int, np.ndarray] = {}
    if events is not None and lines:
        wanted = np.array(sorted(int(line["index"]) for line in lines), dtype=np.int64)
        rows = np.flatnonzero(np.isin(events["request_index"], wanted))
        order = rows[np.argsort(events["request_index"][rows], kind="stable")]
        idx = events["request_index"][order]
        bounds = np.flatnonzero(np.diff(idx)) + 1
        for part in np.split(order, bounds) if len(order) else []:
            per_request[int(events["request_index"][part[0]])] = part
    spans = [
        _span(
            line,
            events["t_ns"][per_request[int(line["index"])]] if events and int(line["index"]) in per_request else None,
        )
        for line in lines
    ]
    lanes = _lanes(spans)
    origin = min((s.start_ns for s in spans), default=0)
    meta = results.get("metadata") or {}
    endpoint = meta.get("endpoint") or {}
    info: dict[str, Any] = {
        "source": "pytps report --trace",
        "run_dir": str(path),
        "schema_version": results.get("schema_version"),
        "date_utc": meta.get("date_utc"),
        "api": meta.get("api"),
        "model": meta.get("model"),
        "transport": meta.get("transport"),
        "endpoint": endpoint,
        "clock": "CLOCK_MONOTONIC; ts is microseconds after origin_monotonic_ns",
        "origin_monotonic_ns": origin,
        "wall_minus_monotonic_ns": (meta.get("clock") or {}).get("wall_minus_monotonic_ns"),
        "requests_in_run": total,
        "requests_in_trace": len(lines),
        "tracks": len(lanes),
        "output_events": sum(len(v) for v in per_request.values()),
        "sampled": sampled,
    }
    if sampled:
        info["note"] = (
            f"sampled: {len(lines)} of {total} requests, spread evenly by request index "
            "(--trace-max-requests); the others and their events are left out"
        )
    if events is None:
        info["events_note"] = "no events.npz or events.log: no output events"
    process_name = f"pytps run {path.name}: {meta.get('model')} via {meta.get('transport')}"

    def generate() -> Iterator[dict[str, Any]]:
        yield {"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": 0, "args": {"name": process_name}}
        for lane in lanes:
            yield {"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": lane.sort, "args": {"name": lane.name}}
            yield {
                "name": "thread_sort_index",
                "ph": "M",
                "ts": 0,
                "pid": PID,
                "tid": lane.sort,
                "args": {"sort_index": lane.sort},
            }
        assert events is not None or not per_request
        for lane in lanes:
            for s in lane.spans:
                yield from _request_events(s, origin)
                rows = per_request.get(int(s.line["index"]))
                if rows is None or events is None:
                    continue
                index = int(s.line["index"])
                for t, kind, tokens, chars in zip(
                    events["t_ns"][rows].tolist(),
                    events["kind"][rows].tolist(),
                    events["tokens"][rows].tolist(),
                    events["chars"][rows].tolist(),
                    strict=True,
                ):
                    kind_name = KIND_NAMES.get(kind, str(kind))
                    yield {
                        "name": kind_name,
                        "cat": "output",
                        "ph": "i",
                        "s": "t",
                        "ts": _us(t, origin),
                        "pid": PID,
                        "tid": s.tid,
                        "args": {"tokens": tokens, "kind": kind_name, "chars": chars, "request": index},
                    }

    return generate(), info


def write_trace(directory: str | Path, out: str | Path, max_requests: int = DEFAULT_MAX_REQUESTS) -> dict[str, Any]:
    """Writes the trace of the run saved in directory to out, one event per line (memory stays
    bounded by the run's events arrays, not the JSON). Returns the trace's metadata object."""
    events, info = trace_events(directory, max_requests)
    out_path = Path(out)
    tmp = out_path.with_name(out_path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        _write(f, events, info)
    tmp.replace(out_path)
    return info


def _write(f: TextIO, events: Iterator[dict[str, Any]], info: dict[str, Any]) -> None:
    f.write('{"traceEvents": [\n')
    first = True
    for ev in events:
        if not first:
            f.write(",\n")
        f.write(json.dumps(ev, separators=(",", ":")))
        first = False
    f.write('\n],\n"displayTimeUnit": "ms",\n"metadata": ')
    f.write(json.dumps(info, indent=1))
    f.write("}\n")
