"""Result files: the journal written as the run goes, and the files written at the end.

- requests.jsonl: one line per finished request, appended and flushed at once, so a crash or
  Ctrl-C loses nothing already measured.
- results.json: metadata, summary and per-request scalars.
- events.npz: per-event arrays (request index, t_ns, kind, tokens, chars); CLOCK_MONOTONIC ns.
Reports read only these files, so a live run and `pytps report DIR` agree.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .records import RequestRecord

# results.json's and the journal's layout (docs/results.md); bumped on every change to either.
SCHEMA_VERSION = 2


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return _jsonable(float(value))
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class Journal:
    """Appends one JSON line per finished request and flushes it to the OS at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the run

    def append(self, rec: RequestRecord, scalars: dict[str, Any]) -> None:
        # The per-event lists are plain ints already; only the scalars need cleaning (a
        # recursive walk over every token would cost more than recording them did).
        line = {
            **_jsonable(scalars),
            "t_sched_ns": rec.t_sched_ns,
            "t_headers_ns": rec.t_headers_ns,
            "first_output_ns": rec.first_output_ns,
            "first_answer_ns": rec.first_answer_ns,
            "last_output_ns": rec.last_output_ns,
            "end_ns": rec.end_ns,
            "error_detail": rec.error_detail,
            "response_id": rec.response_id,
            "finish_reason": rec.finish_reason,
            "usage": rec.usage,
            "done": rec.done,
            "events": rec.events,
            "phases_ns": rec.phases_ns,
        }
        line = _jsonable(line)
        # Per output event (docs/results.md); "output_tokens" stays the request's scalar count.
        line["event_times_ns"] = rec.output_times_ns.tolist()
        line["event_tokens"] = rec.output_tokens.tolist()
        line["event_kinds"] = rec.output_kinds.tolist()
        if len(rec.output_kernel_times_ns):
            line["event_kernel_times_ns"] = rec.output_kernel_times_ns.tolist()
        self._f.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary name and rename, so a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_jsonable(data), f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def write_events(path: Path, records: Sequence[RequestRecord]) -> None:
    counts = [len(r.output_times_ns) for r in records]
    total = sum(counts)
    request_index = (
        np.repeat(np.asarray([r.index for r in records], dtype=np.int64), counts)
        if total
        else np.zeros(0, dtype=np.int64)
    )

    def cat(attr: str, dtype: Any) -> np.ndarray:
        parts = [np.asarray(getattr(r, attr), dtype=dtype) for r in records]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    extra: dict[str, Any] = {}
    if any(len(r.output_kernel_times_ns) for r in records):
        # -1 where a record has no kernel stamps (another transport, or a read without one).
        extra["t_kernel_ns"] = np.concatenate(
            [
                r.output_kernel_times_ns
                if len(r.output_kernel_times_ns) == len(r.output_times_ns)
                else np.full(len(r.output_times_ns), -1, dtype=np.int64)
                for r in records
            ]
        )
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez_compressed(
        tmp,
        **extra,
        request_index=request_index,
        t_ns=cat("output_times_ns", np.int64),
        kind=cat("output_kinds", np.uint8),
        tokens=cat("output_tokens", np.int32),
        chars=cat("output_chars", np.int32),
    )
    os.replace(tmp, path)


def load_results(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / "results.json"
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def load_journal(directory: str | Path) -> list[dict[str, Any]]:
    """The journal's lines; a torn last line (the process died mid-write) is skipped."""
    out = []
    with open(Path(directory) / "requests.jsonl", encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out
