"""A request's output-bearing events as fixed binary rows: the shape the run's summary reads at its
end (measure.summary) and the event log keeps on disk (results.event_log), one layout for both."""

from __future__ import annotations

import numpy as np

from pytps.measure.records import RequestRecord

#: One row per output-bearing event. `layout` is the token layout of docs/metrics.md (what the
#: metrics counted for the event); `tokens` is the server's own per-chunk count (-1: unknown).
ROW = np.dtype(
    [
        ("request_index", "<i8"),
        ("t_ns", "<i8"),
        ("t_kernel_ns", "<i8"),
        ("tokens", "<i4"),
        ("chars", "<i4"),
        ("layout", "<i4"),
        ("kind", "u1"),
    ]
)


def event_rows(rec: RequestRecord, layout: np.ndarray) -> np.ndarray:
    """A request's output-bearing events as log rows."""
    n = len(rec.output_times_ns)
    rows = np.empty(n, dtype=ROW)
    rows["request_index"] = rec.index
    rows["t_ns"] = rec.output_times_ns
    rows["t_kernel_ns"] = rec.output_kernel_times_ns if len(rec.output_kernel_times_ns) == n else -1
    rows["tokens"] = rec.output_tokens
    rows["chars"] = rec.output_chars
    rows["layout"] = layout
    rows["kind"] = rec.output_kinds
    return rows
