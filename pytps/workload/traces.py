"""Production traces to replay (`pytps run --trace FILE --trace-format F`): each request is sent at
its timestamp, on the absolute schedule of rate mode, with the trace's input and output lengths.

Formats, by their published fields:
- mooncake: JSON lines with `timestamp` (ms), `input_length`, `output_length`, `hash_ids`. Each
  hash id stands for one block of `block_size` tokens (512 in the published traces); equal ids are
  identical blocks, so prompts are built block by block and shared ids give shared prefixes.
- azure: the Azure LLM inference trace CSV, `TIMESTAMP,ContextTokens,GeneratedTokens`, timestamps
  like `2023-11-16 18:15:46.6805900` (7 fractional digits, which neither strptime's %f nor
  Python 3.10's fromisoformat takes): parsed exactly, to the nanosecond, by hand.
- burstgpt: the BurstGPT CSV, `Timestamp` (s), `Model`, `Request tokens`, `Response tokens`,
  `Total tokens`, `Log Type`. Rows with 0 response tokens are the trace's failures: skipped, counted.

A malformed line is a TraceError naming the file, the line number and the field.
"""

from __future__ import annotations

import csv
import functools
import math
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError, loads_json
from pytps.workload.synthetic import Prompt

__all__ = ["TRACE_FORMATS", "Trace", "TraceError", "TraceRequest", "TraceWorkload", "load_trace", "parse_window"]

TRACE_FORMATS: tuple[str, ...] = ("mooncake", "azure", "burstgpt")
DEFAULT_BLOCK_SIZE = 512  # tokens per Mooncake hash id, as published

_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000
_AZURE_TIME = re.compile(r"\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?\s*(Z|[+-]00:?00)?\s*")


class TraceError(ConfigError):
    """A trace file that cannot be replayed: which file, line and field, and what was wrong."""


@dataclass(frozen=True)
class TraceRequest:
    """One request of a trace: when (ns after the replay's start, before any speed-up), and how big."""

    offset_ns: int
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()
    line: int = 0


@dataclass
class Trace:
    """The requests to replay, in send order, and what loading did to the file's rows."""

    path: str
    format: str
    requests: list[TraceRequest]
    block_size: int
    speedup: float
    window_s: tuple[float, float] | None
    rows: int = 0  # data rows read
    skipped_failed: int = 0  # BurstGPT rows with 0 response tokens
    outside_window: int = 0
    clipped_input: int = 0  # requests whose input was cut to --max-input-tokens
    clipped_output: int = 0
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    def offsets_ns(self) -> list[int]:
        """Send offsets after speed-up, in ns from the replay's start (non-decreasing)."""
        return [round(r.offset_ns / self.speedup) for r in self.requests]

    def describe(self) -> dict[str, Any]:
        """results.json metadata.workload.trace."""
        return {
            "path": self.path,
            "format": self.format,
            "rows": self.rows,
            "requests": len(self.requests),
            "skipped_failed": self.skipped_failed,
            "outside_window": self.outside_window,
            "clipped_input": self.clipped_input,
            "clipped_output": self.clipped_output,
            "max_input_tokens": self.max_input_tokens,
            "max_output_tokens": self.max_output_tokens,
            "block_size": self.block_size,
            "speedup": self.speedup,
            "window_s": list(self.window_s) if self.window_s else None,
            "span_s": (self.requests[-1].offset_ns / self.speedup / _NS_PER_S) if self.requests else 0.0,
        }


def parse_window(text: str | None) -> tuple[float, float] | None:
    """`START:END` in seconds of the trace's own time (from its first timestamp); either side may be
    empty (`:600`, `60:`). ConfigError when malformed."""
    if text is None:
        return None
    start_s, sep, end_s = str(text).partition(":")
    try:
        if not sep:
            raise ValueError
        start = float(start_s) if start_s.strip() else 0.0
        end = float(end_s) if end_s.strip() else math.inf
    except ValueError:
        raise ConfigError(
            f"--trace-window {text!r} is not START:END in seconds from the trace's start, e.g. 60:660 or :600"
        ) from None
    if not (0 <= start < end) or math.isnan(start):
        raise ConfigError(f"--trace-window {text!r}: need 0 <= START < END")
    return start, end


def _error(path: str, line: int, fieldname: str, why: str) -> TraceError:
    return TraceError(f"trace {path}, line {line}: field {fieldname!r} {why}")


def _count(path: str, line: int, name: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool):
        raise _error(path, line, name, f"is {value!r}, not a token count")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            try:
                f = float(value.strip())
            except ValueError:
                raise _error(path, line, name, f"is {value!r}, not a token count") from None
            if not f.is_integer():
                raise _error(path, line, name, f"is {value!r}, not a whole token count") from None
            value = int(f)
    if not isinstance(value, int):
        raise _error(path, line, name, f"is {value!r}, not a token count")
    if value < minimum:
        raise _error(path, line, name, f"is {value}, must be >= {minimum}")
    return value


def _decimal_ns(path: str, line: int, name: str, value: Any, unit_ns: int) -> int:
    """An exact number of `unit_ns` (ms or s) as integer ns: through Decimal, never a float."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InvalidOperation
        d = Decimal(str(value).strip())
        if not d.is_finite() or d < 0:
            raise InvalidOperation
    except InvalidOperation:
        raise _error(path, line, name, f"is {value!r}, not a time >= 0") from None
    return int((d * unit_ns).to_integral_value())


def azure_time_ns(text: str) -> int:
    """`2023-11-16 18:15:46.6805900` as integer ns since the Unix epoch (UTC; 0-9 fractional
    digits, exactly). ValueError when it is not such a time."""
    m = _AZURE_TIME.fullmatch(text)
    if not m:
        raise ValueError(text)
    whole = datetime.strptime(f"{m[1]} {m[2]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    seconds = int(whole.timestamp())  # whole seconds: exact in a float
    frac = (m[3] or "").ljust(9, "0")
    return seconds * _NS_PER_S + int(frac)


def _mooncake_rows(path: str, f: Any) -> Iterator[tuple[int, int, int, int, tuple[int, ...]]]:
    for line_no, text in enumerate(f, start=1):
        if not text.strip():
            continue
        obj = loads_json(text, f"trace {path}, line {line_no}: the line", TraceError)
        if not isinstance(obj, dict):
            raise TraceError(f"trace {path}, line {line_no}: not a JSON object")
        for key in ("timestamp", "input_length", "output_length"):
            if key not in obj:
                raise _error(path, line_no, key, "is missing")
        t = _decimal_ns(path, line_no, "timestamp", obj["timestamp"], _NS_PER_MS)
        n_in = _count(path, line_no, "input_length", obj["input_length"], 1)
        n_out = _count(path, line_no, "output_length", obj["output_length"], 1)
        ids = obj.get("hash_ids", [])
        if not isinstance(ids, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
            raise _error(path, line_no, "hash_ids", "is not a list of integers")
        yield line_no, t, n_in, n_out, tuple(ids)


def _csv_rows(path: str, f: Any, columns: dict[str, str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {our name: text}) per data row; `columns` maps our names to the header's."""
    reader = csv.reader(f)
    header = next(reader, None)
    if header is None:
        raise TraceError(f"trace {path}: empty file, no header line")
    names = [h.strip() for h in header]
    where = {}
    for ours, theirs in columns.items():
        if theirs not in names:
            raise TraceError(f"trace {path}, line 1: the header has no {theirs!r} column (it has {', '.join(names)})")
        where[ours] = names.index(theirs)
    for row in reader:
        line_no = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(names):
            raise TraceError(f"trace {path}, line {line_no}: {len(row)} fields, the header has {len(names)}")
        yield line_no, {ours: row[i] for ours, i in where.items()}


def _azure_rows(path: str, f: Any) -> Iterator[tuple[int, int, int, int, tuple[int, ...]]]:
    cols = {"t": "TIMESTAMP", "in": "ContextTokens", "out": "GeneratedTokens"}
    for line_no, row in _csv_rows(path, f, cols):
        try:
            t = azure_time_ns(row["t"])
        except ValueError:
            raise _error(path, line_no, "TIMESTAMP", f"is {row['t']!r}, not like 2023-11-16 18:15:46.6805900") from None
        n_in = _count(path, line_no, "ContextTokens", row["in"], 1)
        n_out = _count(path, line_no, "GeneratedTokens", row["out"], 1)
        yield line_no, t, n_in, n_out, ()


def _burstgpt_rows(path: str, f: Any, failed: list[int]) -> Iterator[tuple[int, int, int, int, tuple[int, ...]]]:
    cols = {"t": "Timestamp", "in": "Request tokens", "out": "Response tokens"}
    for line_no, row in _csv_rows(path, f, cols):
        t = _decimal_ns(path, line_no, "Timestamp", row["t"], _NS_PER_S)
        n_in = _count(path, line_no, "Request tokens", row["in"], 1)
        n_out = _count(path, line_no, "Response tokens", row["out"], 0)
        if n_out == 0:
            failed[0] += 1  # a failure in the trace: nothing to replay
            continue
        yield line_no, t, n_in, n_out, ()


EXAMPLE_PREFIX = "example:"
# The small made-up traces shipped with the package (one per format), so that the docs' replay
# commands work from any folder: `--trace example:mooncake_small.jsonl`.
EXAMPLE_TRACES = Path(__file__).resolve().parent / "example_traces"


def shipped_example(name: str) -> str:
    """The path of `example:NAME` (a trace shipped with pytps); any other name unchanged."""
    if not name.startswith(EXAMPLE_PREFIX):
        return name
    path = EXAMPLE_TRACES / name[len(EXAMPLE_PREFIX) :]
    if not path.is_file() or path.parent != EXAMPLE_TRACES:
        shipped = ", ".join(EXAMPLE_PREFIX + p.name for p in sorted(EXAMPLE_TRACES.iterdir()) if p.is_file())
        raise ConfigError(f"--trace {name}: no such example trace; pytps ships {shipped}")
    return str(path)


def load_trace(
    path: str | os.PathLike[str],
    fmt: str,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    speedup: float = 1.0,
    window: str | tuple[float, float] | None = None,
    max_input_tokens: int | None = None,
    max_output_tokens: int | None = None,
) -> Trace:
    """Reads and validates a whole trace (TraceError / ConfigError when it cannot be replayed).

    Times are rebased on the trace's first timestamp; `window` (START:END seconds of that time)
    keeps the requests with START <= t < END, rebased on START; `speedup` divides every offset.
    Inputs and outputs above the maxima are clipped to them, and counted."""
    name = os.fspath(path)
    if fmt not in TRACE_FORMATS:
        raise ConfigError(f"--trace-format {fmt!r} is unknown: use one of {', '.join(TRACE_FORMATS)}")
    for flag, v in (("--trace-block-size", block_size), ("--max-input-tokens", max_input_tokens),
                    ("--max-output-tokens", max_output_tokens)):  # fmt: skip
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise ConfigError(f"{flag} must be an integer >= 1, got {v!r}")
    if not (isinstance(speedup, (int, float)) and math.isfinite(speedup) and speedup > 0):
        raise ConfigError(f"--trace-speedup must be a number > 0 (2 replays twice as fast), got {speedup!r}")
    win = parse_window(window) if isinstance(window, str) or window is None else window
    name = shipped_example(name)
    failed = [0]
    try:
        f = open(name, encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ConfigError(f"--trace {name}: {exc.strerror or exc}") from None
    with f:
        if fmt == "mooncake":
            rows = list(_mooncake_rows(name, f))
        elif fmt == "azure":
            rows = list(_azure_rows(name, f))
        else:
            rows = list(_burstgpt_rows(name, f, failed))
    trace = Trace(name, fmt, [], block_size, float(speedup), win, rows=len(rows) + failed[0], skipped_failed=failed[0])
    trace.max_input_tokens, trace.max_output_tokens = max_input_tokens, max_output_tokens
    if not rows:
        raise TraceError(f"trace {name}: no requests to replay ({failed[0]} rows with 0 response tokens skipped)")
    rows.sort(key=lambda r: r[1])  # stable: equal times keep the file's order
    first = rows[0][1]
    start_ns = round(win[0] * _NS_PER_S) if win else 0
    end_ns = win[1] * _NS_PER_S if win else math.inf
    for line_no, t, n_in, n_out, ids in rows:
        rel = t - first
        if not start_ns <= rel < end_ns:
            trace.outside_window += 1
            continue
        if max_input_tokens is not None and n_in > max_input_tokens:
            n_in = max_input_tokens
            ids = ids[: -(-n_in // block_size)]
            trace.clipped_input += 1
        if max_output_tokens is not None and n_out > max_output_tokens:
            n_out = max_output_tokens
            trace.clipped_output += 1
        trace.requests.append(TraceRequest(rel - start_ns, n_in, n_out, ids, line_no))
    if not trace.requests:
        raise TraceError(f"trace {name}: no request inside --trace-window {window}")
    return trace


class TraceWorkload:
    """The prompts of a trace replay: request i is the trace's request i, with its input length
    (sized like synthetic prompts, and calibrated like them from the server's prompt_tokens) and
    its output length as max_tokens.

    Mooncake prompts are built block by block from their hash ids: the words of the block with id
    h depend only on (seed, salt, h), so equal ids give byte-identical text and shared leading ids
    byte-identical prompt prefixes. A block's word count is fixed when its id is first used (by
    the calibration in effect then): later requests must see the very same block, so a block
    cannot follow calibration made after it. Tokens beyond a request's hash ids, and every prompt
    of the formats without ids, are unique to the request (no prefix cache can serve them)."""

    def __init__(self, trace: Trace, seed: int = 0, *, salt: str = "") -> None:
        from pytps.workload.synthetic import SyntheticWorkload

        self.trace = trace
        self.seed = seed
        self.salt = salt
        self._sizer = SyntheticWorkload(1, 1, seed=seed, salt=salt)
        self._block_words: dict[int, int] = {}  # hash id -> its word count, fixed at first use
        # The words of recent blocks: a long prompt's blocks are not redrawn on every send.
        self._words = functools.lru_cache(maxsize=4096)(self._draw_block)

    def __len__(self) -> int:
        return len(self.trace.requests)

    def _block(self, h: int, tokens: int) -> list[str]:
        full = self._block_words.get(h)
        if full is None:
            full = self._block_words[h] = self._sizer.words_for(self.trace.block_size)
        # A partial (last) block is the start of the full one: its words are a prefix of them.
        k = full if tokens >= self.trace.block_size else min(full, self._sizer.words_for(tokens))
        return self._words(h, k)

    def _draw_block(self, h: int, k: int) -> list[str]:
        from pytps.workload.synthetic import _shuffled_words

        return _shuffled_words(random.Random(f"pytps:{self.seed}:{self.salt}:block:{h}"), k)

    def prompt(self, i: int) -> Prompt:
        from pytps.workload.datasets import DEFAULT_TOKENS_PER_WORD

        req = self.trace.requests[i]
        if not req.hash_ids:
            return self._sizer.sized_prompt(i, req.input_tokens, req.output_tokens)
        words: list[str] = []
        left = req.input_tokens
        for h in req.hash_ids:
            if left <= 0:
                break
            words += self._block(h, min(left, self.trace.block_size))
            left -= self.trace.block_size
        if left > 0:  # more input than hash ids: a tail of the request's own
            tail = self._sizer.sized_prompt(i, left, req.output_tokens, tag="tail")
            words += (tail.text or "").split()
        text = " ".join(words)
        return Prompt(i, None, text, req.input_tokens, req.output_tokens, round(len(words) * DEFAULT_TOKENS_PER_WORD))

    def calibrate(self, planned_tokens: int | None, reported_prompt_tokens: int | None) -> None:
        self._sizer.calibrate(planned_tokens, reported_prompt_tokens)

    def prompt_calibration(self) -> dict[str, Any]:
        return self._sizer.prompt_calibration()

    def describe(self) -> dict[str, Any]:
        return {"kind": "trace", "seed": self.seed, "salt": self.salt, "trace": self.trace.describe()}
