"""Per-request columns that do not stay in memory: the summary's exact percentiles need every
request's value, but not all of them at once, nor until the end.

Columns fills a block of rows in memory (Python arrays, one per column: an append is what it
always was) and, every BLOCK_ROWS rows, writes the block to a binary file beside the event log,
column after column. At the end each column is read back alone (column()): a run's memory then
holds one block plus, at the end, one column, whatever the run's length. Without a file the
blocks stay in memory (a library summary of records held anyway, a merge).

The file's layout: blocks of BLOCK_ROWS rows; in a block, each column's values in spec order,
native-endian (array typecodes: 'd' float64, 'q' int64, 'b' int8). The file is scratch: the run's
finish removes it, and a killed run's summary is rebuilt from the journal (pytps.results.rebuild).
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

#: Rows per block: 65,536 rows of the summary's ~20 columns are ~10 MB in memory, written at once.
BLOCK_ROWS = 1 << 16

_DTYPES = {"d": np.float64, "q": np.int64, "b": np.int8}


class Columns:
    """Named columns of equal length, appended a row at a time through `live`, then commit()."""

    def __init__(self, spec: dict[str, str], path: Path | None = None, block_rows: int | None = None) -> None:
        self.spec = spec
        #: The current block's columns: append one value to each, then call commit().
        self.live: dict[str, array[Any]] = {name: array(code) for name, code in spec.items()}
        self._block_rows = block_rows = block_rows or BLOCK_ROWS
        self._path = path
        self._file: BinaryIO | None = None
        self._memory: list[bytes] = []  # spilled blocks, without a file
        self._blocks = 0
        self._first = next(iter(self.live.values()))
        # Each column's offset in a block, and a block's size, in bytes.
        self._offset: dict[str, int] = {}
        offset = 0
        for name, code in spec.items():
            self._offset[name] = offset
            offset += array(code).itemsize * block_rows
        self._block_bytes = offset

    def __len__(self) -> int:
        return self._blocks * self._block_rows + len(self._first)

    def commit(self) -> None:
        """A row was appended to every column: spill the block once it is full."""
        if len(self._first) >= self._block_rows:
            self._spill()

    def _spill(self) -> None:
        data = b"".join(col.tobytes() for col in self.live.values())
        if self._path is None:
            self._memory.append(data)
        else:
            if self._file is None:
                self._file = open(self._path, "w+b")  # noqa: SIM115 - lives as long as the run
            self._file.seek(0, 2)  # column() may have read from the middle
            self._file.write(data)
        self._blocks += 1
        for col in self.live.values():
            del col[:]

    def column(self, name: str) -> np.ndarray:
        """One column, every row, in order: read from the spilled blocks and the live one."""
        dtype = np.dtype(_DTYPES[self.spec[name]])
        out = np.empty(len(self), dtype=dtype)
        n = self._block_rows
        size = n * dtype.itemsize
        if self._file is not None:
            self._file.flush()
        for k in range(self._blocks):
            start = k * self._block_bytes + self._offset[name]
            if self._file is not None:
                self._file.seek(start)
                raw = self._file.read(size)
            else:
                raw = self._memory[k][self._offset[name] : self._offset[name] + size]
            out[k * n : (k + 1) * n] = np.frombuffer(raw, dtype=dtype)
        out[self._blocks * n :] = np.frombuffer(self.live[name], dtype=dtype)
        return out

    def close(self) -> None:
        """Removes the file (the columns' values are gone with it)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
