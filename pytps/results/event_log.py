"""The per-event log: every output-bearing event of every request, appended as each request
finishes and flushed at once, in a fixed binary row layout, so a run of any length holds none of
it in memory and Ctrl-C loses none of it. At the end events.npz is written from it in pieces.

The log (events.log) lives in the results folder while the run goes; once events.npz is
written from it, it is removed. A run killed before that leaves it: read it with read_chunks().
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from pytps.measure.event_rows import ROW, event_row_bytes
from pytps.measure.records import RequestRecord
from pytps.results.files import EVENT_LOG, EVENTS

#: events.npz's arrays: name -> (log column, dtype). t_kernel_ns only when some read had one.
NPZ_ARRAYS = {
    "request_index": ("request_index", np.int64),
    "t_ns": ("t_ns", np.int64),
    "kind": ("kind", np.uint8),
    "tokens": ("tokens", np.int32),
    "chars": ("chars", np.int32),
    "t_kernel_ns": ("t_kernel_ns", np.int64),
}

# Rows read at once when the log is read back: bounded memory whatever the run's length.
CHUNK_ROWS = 1 << 17


class EventLog:
    """Appends each finished request's events to `path`: one write per request; flush() sends
    them to the OS (RunOutput: at once, or once per turn of the event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "ab")  # noqa: SIM115 - lives as long as the run
        self.kernel_stamps = False

    def append(self, rec: RequestRecord, layout: np.ndarray) -> None:
        if not len(rec.output_times_ns):
            return
        data, kernel = event_row_bytes(rec, layout)
        self.kernel_stamps |= kernel
        self._f.write(data)

    def flush(self) -> None:
        """The rows appended so far, to the OS (a no-op once closed: close() flushed them)."""
        if not self._f.closed:
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def read_chunks(path: Path, rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
    """The log's rows, `rows` at a time (a torn last row, from a process killed mid-write, is left out)."""
    with open(path, "rb") as f:
        while True:
            data = f.read(rows * ROW.itemsize)
            whole = len(data) - len(data) % ROW.itemsize
            if whole == 0:
                return
            yield np.frombuffer(data[:whole], dtype=ROW)


def write_npz(log_path: Path, npz_path: Path, *, kernel_stamps: bool) -> None:
    """events.npz from the log, one array at a time and each in pieces, so memory stays bounded;
    written under a temporary name and renamed, so a reader never sees half a file."""
    total = os.path.getsize(log_path) // ROW.itemsize if log_path.exists() else 0
    tmp = npz_path.with_name(npz_path.stem + ".tmp.npz")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True) as zf:
        for name, (column, dtype) in NPZ_ARRAYS.items():
            if name == "t_kernel_ns" and not kernel_stamps:
                continue
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                header = {
                    "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                    "fortran_order": False,
                    "shape": (total,),
                }
                np.lib.format.write_array_header_2_0(member, header)
                if total:
                    for chunk in read_chunks(log_path):
                        member.write(np.ascontiguousarray(chunk[column], dtype=dtype).tobytes())
    os.replace(tmp, npz_path)


def load_saved_events(directory: Path) -> dict[str, np.ndarray] | None:
    """A saved run's events as columns: events.npz's arrays (or, for a killed run, events.log's
    columns); None when neither exists. What reports of saved runs read (trace, html)."""
    npz = directory / EVENTS
    names = ("request_index", "t_ns", "kind", "tokens", "chars")
    if npz.exists():
        with np.load(npz) as data:
            return {k: np.asarray(data[k]) for k in names}
    log = directory / EVENT_LOG
    if log.exists():
        chunks = list(read_chunks(log))
        rows = np.concatenate(chunks) if chunks else np.zeros(0, dtype=ROW)
        return {k: np.asarray(rows[k]) for k in names}
    return None
