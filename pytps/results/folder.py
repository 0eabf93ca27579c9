"""Result files (docs/results.md): the journal written as the run goes, results.json, and reading
them back. The per-event log and events.npz are pytps.results.event_log's.

- requests.jsonl: one line of scalars per finished request, appended and flushed at once, so a
  crash or Ctrl-C loses nothing already measured.
- results.json: metadata and summary.
Reports read only these files, so a live run and `pytps report DIR` agree.
"""

from __future__ import annotations

import json
import math
import operator
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.fast_json import json_line, json_line_of, orjson_module
from pytps.measure.records import RequestRecord
from pytps.results.files import JOURNAL, RESULTS, RUN_FILES

# results.json's and the journal's layout (docs/results.md); bumped on every change to either.
SCHEMA_VERSION = 10


# Values that are JSON as they are: most of a journal line, handed back without the checks below
# (one call per value per request was the journal's largest cost, issue 42). bool and int are
# exact types here, so numpy's scalars (not their subclasses) still take the slow path.
_PLAIN = frozenset((str, int, bool, type(None)))


def _jsonable(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {k: (v if type(v) in _PLAIN else _jsonable(v)) for k, v in value.items()}
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


def journal_line(rec: RequestRecord, scalars: dict[str, Any]) -> dict[str, Any]:
    """One line of requests.jsonl (docs/results.md): the request's metrics (`scalars`) and what its
    record holds besides the per-event arrays. pytps.instrument's records have the same fields."""
    out: dict[str, Any] = _jsonable(_line_fields(rec, scalars))
    return out


#: What a journal line takes from the record besides its metrics, after them: each the record's
#: attribute of the same name.
_RECORD_FIELDS = (
    *("t_sched_ns", "t_headers_ns", "first_output_ns", "first_answer_ns", "last_output_ns", "end_ns"),
    *("error_detail", "response_id", "request_id", "sent_request_id", "finish_reason", "usage"),
    *("usage_implausible", "done", "events", "phases_ns", "retries", "connection_id", "session", "turn"),
    "session_end",
)
_record_values = operator.attrgetter(*_RECORD_FIELDS)


def _line_fields(rec: RequestRecord, scalars: dict[str, Any]) -> dict[str, Any]:
    return {**scalars, **dict(zip(_RECORD_FIELDS, _record_values(rec), strict=True))}


def refuse_used_folder(directory: Path) -> None:
    """A results folder holds one run: a second run into it would mix two (a journal of both
    beside one summary), so it is refused before anything is written, and the folder left as it is."""
    from pytps.errors import ConfigError

    found = [name for name in RUN_FILES if (directory / name).exists()]
    if found:
        raise ConfigError(
            f"--out {directory} already holds a run ({', '.join(found)}): give a new folder, or remove that one first"
        )


#: A request journaled when its timing ended, its answer still with its grader.
GRADING_PENDING = "pending"
#: Its verdict line came (the grader answered, failed or timed out).
GRADING_DONE = "graded"
#: The run was stopped before its verdict came.
GRADING_STOPPED = "stopped"
#: The key of a verdict line: the index of the request line it completes.
VERDICT_OF = "verdict_of"
#: What a verdict line carries: every field the grade decides.
VERDICT_FIELDS = ("useful", "why_not_useful", "cost", "item", "grader", "correct", "score", "why_wrong")


# json.dumps(obj, separators=(",", ":")), with the encoder made once rather than once per line.
_compact = json.JSONEncoder(separators=(",", ":")).encode


class _Unusual(Exception):
    """A value whose text the two encoders might write differently: the line takes _compact."""


# Keys seen to be printable ASCII (a journal's keys are a few dozen names; a server's `fields`
# may add some): checked once, not on every line. Bounded, so a server's keys cannot grow it.
_PLAIN_KEYS: set[str] = set()


def _plain_key(key: Any) -> bool:
    if key in _PLAIN_KEYS:
        return True
    if type(key) is not str or not (key.isascii() and key.isprintable()):
        return False
    if len(_PLAIN_KEYS) < 4096:
        _PLAIN_KEYS.add(key)
    return True


def _for_orjson(value: Any, fragment: Any) -> Any:
    """_jsonable(value) for orjson, written as json.dumps would write it: each float as its
    float.__repr__ (orjson's own float text differs, e.g. 1e-05), None for NaN and infinities as
    _jsonable gives; strings only of printable ASCII (json.dumps escapes the rest as \\uXXXX,
    orjson writes UTF-8), and keys too. Anything else (numpy scalars, other objects, other keys)
    raises _Unusual: that line is written by _compact."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            if not _plain_key(k):
                raise _Unusual
            t = type(v)
            if t is str:
                if not (v.isascii() and v.isprintable()):
                    raise _Unusual
            elif t is float:
                v = fragment(float.__repr__(v)) if math.isfinite(v) else None
            elif not (t is int or t is bool or v is None):
                v = _for_orjson(v, fragment)
            out[k] = v
        return out
    if kind is list or kind is tuple:
        return [_for_orjson(v, fragment) for v in value]
    if kind is str:
        if value.isascii() and value.isprintable():
            return value
        raise _Unusual
    if kind is float:
        return fragment(float.__repr__(value)) if math.isfinite(value) else None
    if kind is int or kind is bool or value is None:
        return value
    raise _Unusual


def line_text(fields: dict[str, Any]) -> str:
    """json.dumps(_jsonable(fields), separators=(",", ":")): a journal line's text, the same bytes
    whichever encoder writes it (issue 42: the standard library's was a tenth of a short request's
    cost). The native writer (_core.json_line) takes a line of plain values in one pass; one it
    refuses (numpy scalars, subclasses, other keys) goes to orjson, and an integer orjson cannot
    hold (beyond 64 bits) to _compact."""
    text = json_line(fields)
    if text is not None:
        return text
    orjson = orjson_module()
    if orjson is not None:
        try:
            return str(orjson.dumps(_for_orjson(fields, orjson.Fragment)).decode())
        except (_Unusual, TypeError):  # orjson.JSONEncodeError is a TypeError
            pass
    return _compact(_jsonable(fields))


class Journal:
    """Appends one JSON line per finished request; each reaches the OS by flush() (RunOutput
    flushes at once, or once per turn of the event loop: see RunOutput.flush_each_turn). A graded
    request may come in two lines: the request when its timing ended ("grading": "pending"),
    then its verdict ({"verdict_of": index, ...}); read_journal() merges them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # Bytes, UTF-8: a text file's write() costs ~0.5 us more a line than the bytes' (issue 42).
        self._f = open(path, "ab")  # noqa: SIM115 - lives as long as the run

    def append(self, rec: RequestRecord, scalars: dict[str, Any]) -> None:
        # Scalars only: the per-event arrays go to the event log (pytps.results.event_log), which keeps
        # this file small however long the run.
        # Written natively from the metrics and the record's values, without the merged dict
        # (issue 42: ~1 us of every request); else line_text decides, as it did.
        line = json_line_of(scalars, _RECORD_FIELDS, _record_values(rec))
        self._f.write(line if line is not None else (line_text(_line_fields(rec, scalars)) + "\n").encode())

    def append_verdict(self, index: int, fields: dict[str, Any]) -> None:
        self._f.write((_compact({VERDICT_OF: index, **fields}) + "\n").encode())

    def flush(self) -> None:
        """The lines appended so far, to the OS (a no-op once closed: close() flushed them)."""
        if not self._f.closed:
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def read_journal(path: str | Path) -> Iterator[dict[str, Any]]:
    """The one reader of requests.jsonl: each request's line with its verdict merged in. A torn
    last line (the process died mid-write) is skipped. A request line waiting for its verdict is
    held until the verdict comes (so lines come in the order verdicts were written, which is the
    order requests were finished); one whose verdict never came (a killed run) comes at the end,
    still "grading": "pending". Memory: only the requests being graded at once."""
    waiting: dict[Any, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for text in f:
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue
            if not isinstance(line, dict):
                continue
            if VERDICT_OF in line:
                request = waiting.pop(line.pop(VERDICT_OF), None)
                if request is not None:
                    request.update(line)
                    yield request
            elif line.get("grading") == GRADING_PENDING:
                waiting[line.get("index")] = line
            else:
                yield line
    yield from waiting.values()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary name and rename, so a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_jsonable(data), f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def load_results(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / RESULTS
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def journal_lines(directory: str | Path) -> Iterator[dict[str, Any]]:
    """The journal's requests, read as iterated (the one reader of requests.jsonl), each verdict
    line merged into its request (read_journal); a torn last line, from a process killed
    mid-write, is left out."""
    for line in read_journal(Path(directory) / JOURNAL):
        if "index" in line:
            yield line


def load_journal(directory: str | Path) -> list[dict[str, Any]]:
    """The journal's requests, as a list."""
    return list(journal_lines(directory))


class SavedResults:
    """A results folder read back: results.json and the journal's lines, with the views every
    report of saved runs takes (pytps report --html, pytps compare)."""

    def __init__(self, path: Path, results: dict[str, Any], journal: list[dict[str, Any]]) -> None:
        self.path = path
        self.results = results
        self.journal = journal

    @property
    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = self.results.get("metadata") or {}
        return out

    @property
    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = self.results.get("summary") or {}
        return out

    def measured(self) -> list[dict[str, Any]]:
        """Journal lines of measured (not warm-up) requests: what the summary covers."""
        return [line for line in self.journal if not line.get("warmup")]

    def values(self, key: str) -> np.ndarray:
        """A per-request figure over successful measured requests that have it, as the summary's
        distributions take it."""
        vals = [line.get(key) for line in self.measured() if line.get("ok")]
        arr = np.asarray([v for v in vals if isinstance(v, (int, float))], dtype=np.float64)
        return arr[np.isfinite(arr)]
