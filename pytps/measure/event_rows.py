"""A request's output-bearing events as fixed binary rows: the shape the run's summary reads at its
end (measure.summary) and the event log keeps on disk (results.event_log), one layout for both."""

from __future__ import annotations

import struct

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


# One row as struct packs it: ROW is packed (no padding), little-endian, in this order.
_ONE_ROW = struct.Struct("<qqqiiiB")
_I32 = range(-(1 << 31), 1 << 31)


def event_row_bytes(rec: RequestRecord, layout: np.ndarray) -> tuple[bytes, bool]:
    """event_rows(rec, layout).tobytes(), and whether a row holds a kernel stamp. A request of one
    event (a 1-token answer) is packed directly: a structured array per request was most of the
    event log's cost (issue 42); values outside a field's range take the general path."""
    if len(rec.output_times_ns) == 1 and len(rec.output_tokens) == len(rec.output_chars) == len(layout) == 1:
        kernel = int(rec.output_kernel_times_ns[0]) if len(rec.output_kernel_times_ns) == 1 else -1
        tokens, chars, carried = int(rec.output_tokens[0]), int(rec.output_chars[0]), int(layout[0])
        kind = int(rec.output_kinds[0]) if len(rec.output_kinds) == 1 else -1
        if tokens in _I32 and chars in _I32 and carried in _I32 and 0 <= kind < 256:
            row = _ONE_ROW.pack(rec.index, int(rec.output_times_ns[0]), kernel, tokens, chars, carried, kind)
            return row, kernel >= 0
    rows = event_rows(rec, layout)
    return rows.tobytes(), bool(len(rows)) and bool((rows["t_kernel_ns"] >= 0).any())
