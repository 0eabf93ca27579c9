"""Metrics, computed from RequestRecords and nothing else, exactly as docs/metrics.md defines them.

Each function cites the definition it implements; change both together.
"""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any, overload

import numpy as np

from pytps.measure.records import RequestRecord
from pytps.measure.server_timings import read as read_server_timings

NS_PER_S = 1_000_000_000
PERCENTILES = (50, 90, 95, 99, 99.9)
PERCENTILE_KEYS = ("p50", "p90", "p95", "p99", "p999")
DISTRIBUTION_KEYS = ("count", "mean", "stddev", "min", *PERCENTILE_KEYS, "max", "mean_ci95", "p50_ci95")

# Student's t(0.975, df) for df = 1..30; beyond that the normal 1.96 is within 2%.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def _t975(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


# ---- per request ----------------------------------------------------------------------------


def output_tokens(rec: RequestRecord) -> tuple[int, str]:
    """Output tokens and their source: server usage, else a local tokenizer, else events; an
    embeddings or rerank request (rec.inputs set) generates none ("none")."""
    if rec.inputs is not None:
        return 0, "none"
    completion = rec.usage.get("completion_tokens")
    if completion is not None and completion >= 0:
        return int(completion), "usage"
    if rec.tokenizer_tokens is not None:
        return int(rec.tokenizer_tokens), "tokenizer"
    return len(rec.output_times_ns), "events"


def trusted_event_counts(rec: RequestRecord, tokens: int) -> np.ndarray | None:
    """The server's per-event token counts (per-chunk usage), when they can be trusted: known for
    every output-bearing event and adding up to the request's tokens. The one rule for them."""
    return _trusted_counts(len(rec.output_times_ns), rec.output_tokens, tokens)


def _trusted_counts(n: int, per_event_tokens: Any, tokens: int) -> np.ndarray | None:
    per_event = np.asarray(per_event_tokens, dtype=np.int64)
    if n and len(per_event) == n and (per_event >= 0).all() and int(per_event.sum()) == tokens:
        return per_event
    return None


def event_tokens(rec: RequestRecord, tokens: int) -> np.ndarray:
    """Integer tokens per output-bearing event, summing to `tokens`: the one layout that TPOT, ITL,
    steady throughput and the time series all use (docs/metrics.md, "token layout")."""
    return token_layout(len(rec.output_times_ns), rec.output_tokens, tokens)


def token_layout(n: int, per_event_tokens: Any, tokens: int) -> np.ndarray:
    """event_tokens() from saved columns (n output-bearing events, their per-chunk counts with -1
    where unknown, the request's output tokens), so a report of a saved run lays tokens out alike.

    The trusted per-event counts; else the tokens spread as evenly as integers allow, rounding the
    cumulative count up, so the first output-bearing event (TTFT's) carries at least one token.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        # One event carries them all: trusted counts must add up to `tokens`, and the even spread
        # is ceil(1 x tokens / 1); either way [tokens], without numpy's per-call cost (issue 42:
        # 1-token requests, one layout per request).
        return np.array((tokens,), dtype=np.int64)
    trusted = _trusted_counts(n, per_event_tokens, tokens)
    if trusted is not None:
        return trusted
    # Integer arithmetic: ceil(i * tokens / n) exactly, whatever the sizes.
    i = np.arange(n + 1, dtype=np.int64)
    edges = -((-i * tokens) // n)
    return np.diff(edges)


def decode_span(times_ns: np.ndarray, layout: np.ndarray) -> tuple[int, int] | None:
    """(tokens after the first token-carrying event, ns from it to the last token-carrying event),
    or None with fewer than two token-carrying events."""
    if len(layout) < 2:  # fewer than two events: fewer than two carry a token
        return None
    carrying = np.flatnonzero(np.asarray(layout) > 0)
    if len(carrying) < 2:
        return None
    first, last = int(carrying[0]), int(carrying[-1])
    return int(np.asarray(layout)[first + 1 :].sum()), int(times_ns[last]) - int(times_ns[first])


def itl_samples(times_ns: np.ndarray, layout: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values_ns, counts): event i >= 1 with k >= 1 tokens gives k samples of (t_i - t_prev) / k,
    t_prev being the previous event that carried a token. The first carrying event's tokens give
    none, so the samples add up to decode_span's time and number its tokens."""
    if len(layout) < 2:  # fewer than two events, so fewer than two carrying one: no sample
        return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
    carrying = np.asarray(layout) > 0
    t = np.asarray(times_ns, dtype=np.int64)[carrying]
    k = np.asarray(layout, dtype=np.int64)[carrying]
    if len(t) < 2:
        return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.int64)
    return np.diff(t) / k[1:], k[1:]


def itl_token_weights_ns(times_ns: np.ndarray, layout: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """itl_samples() in whole ns, each value with its count of tokens: what the run's ITL figures
    are computed from, the counts as weights (never one array entry per token, so a server's token
    count never sizes an allocation). 0 (events delivered by one read) counts as 1 ns."""
    values, counts = itl_samples(times_ns, layout)
    return np.maximum(1, np.rint(values)).astype(np.int64), counts


def itl_token_samples_ns(times_ns: np.ndarray, layout: np.ndarray) -> np.ndarray:
    """itl_token_weights_ns() as one sample per token (for plots of a saved run, whose layout's
    counts passed pytps.measure.usage's bounds)."""
    values, counts = itl_token_weights_ns(times_ns, layout)
    return np.repeat(values, counts)


@overload
def e2e_for(output_tokens: int, ttft_s: float | None, tpot_s: float | None) -> float | None: ...
@overload
def e2e_for(output_tokens: int, ttft_s: np.ndarray, tpot_s: np.ndarray) -> np.ndarray: ...


def e2e_for(output_tokens: int, ttft_s: Any, tpot_s: Any) -> Any:
    """End-to-end time for a given output length from a request's own TTFT and TPOT:
    TTFT + (n - 1) x TPOT (docs/metrics.md), so runs with different lengths compare. Element-wise
    on arrays (NaN where either is), with the same float operations, so the same values."""
    if ttft_s is None or tpot_s is None:
        return None
    return ttft_s + (output_tokens - 1) * tpot_s


def ttfb_s(rec: RequestRecord) -> float | None:
    """Time to first byte (docs/metrics.md): from t_send to the read that completed the response's
    headers. The one figure a non-streaming response has besides E2E (pytps.instrument)."""
    return _seconds(rec.t_headers_ns, rec.t_send_ns)


def finish_ns(rec: RequestRecord) -> int | None:
    """When a request finished, for every window (throughput, steady, time series): its end (the
    terminal marker's arrival), or, for one that ended without it, when the transport gave up."""
    return finish_of(rec.end_ns, rec.t_done_ns)


def finish_of(end_ns: int | None, t_done_ns: int | None) -> int | None:
    """finish_ns() from saved columns (a journal line's end_ns and t_done_ns)."""
    return end_ns if end_ns is not None else t_done_ns


@dataclass
class RequestMetrics:
    index: int
    warmup: bool
    ok: bool
    error: str | None
    status: int | None
    t_send_ns: int
    t_done_ns: int | None
    ttft_s: float | None
    ttfat_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    decode_tps: float | None
    user_tps: float | None
    output_tokens: int
    token_source: str
    output_events: int
    tokens_per_event: float | None
    prompt_tokens: int | None
    schedule_lag_s: float | None
    send_overhead_s: float | None
    ttft_sched_s: float | None
    e2e_sched_s: float | None
    e2e_500_s: float | None
    # The server's own timings beside pytps's (pytps.measure.server_timings.read), or None.
    server_timings: dict[str, Any] | None = None
    ttfb_s: float | None = None
    # False: the response was one JSON body (no TTFT, TPOT or ITL exist: docs/metrics.md).
    stream: bool = True
    # Embeddings and rerank: inputs sent, and the length of the vectors that came back.
    inputs: int | None = None
    embedding_dim: int | None = None
    # Image prompts (--images): the images sent, their encoded bytes and pixels.
    images: int = 0
    image_bytes: int = 0
    image_pixels: int = 0
    # Token agreement (docs/metrics.md): output tokens asked for (max_tokens), counted from the
    # stream (and how), and billed by the server (usage); each None where not known.
    tokens_asked: int | None = None
    tokens_streamed: int | None = None
    tokens_streamed_source: str | None = None
    tokens_billed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """dataclasses.asdict(self), field for field, without its recursion over every scalar: a
        journal line per request made this the largest per-request cost (issue 42). Containers
        (server_timings) are still copied deeply, as asdict does."""
        out = {}
        for name in _METRIC_FIELDS:
            value = getattr(self, name)
            if type(value) not in _ATOMS:
                value = asdict(value) if is_dataclass(value) and not isinstance(value, type) else _tree_copy(value)
            out[name] = value
        return out

    def as_fields(self) -> dict[str, Any]:
        """as_dict()'s keys and values without its copies: a nested dict (server_timings) is this
        object's own. For a reader that only writes them out (the journal's line), in one C-level
        pass over the fields; a value of any other kind takes as_dict()'s conversion."""
        state = self.__dict__
        # measure() and RequestMetrics(...) lay the fields out in their order: a copy of the
        # object's own dict is then the same keys in the same order (issue 42: ~1.7 us of every
        # request against a getter over the fields); anything else takes the getter.
        if len(state) == _FIELD_COUNT and tuple(state) == _METRIC_FIELDS:
            if _ATOMS_AND_DICT.issuperset(map(type, state.values())):
                return state.copy()
            return self.as_dict()
        values = _FIELD_VALUES(self)
        if not _ATOMS_AND_DICT.issuperset(map(type, values)):
            return self.as_dict()
        return dict(zip(_METRIC_FIELDS, values, strict=True))


def _tree_copy(value: Any) -> Any:
    """copy.deepcopy of a JSON-like tree (server_timings: dicts, lists and atoms), without
    deepcopy's memo and dispatch for each leaf; anything else still goes through deepcopy."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: _tree_copy(v) for k, v in value.items()}
    if kind is list:
        return [_tree_copy(v) for v in value]
    return copy.deepcopy(value)


_METRIC_FIELDS = tuple(f.name for f in fields(RequestMetrics))
_FIELD_COUNT = len(_METRIC_FIELDS)
assert not hasattr(RequestMetrics, "__post_init__"), "measure() makes RequestMetrics without __init__"
# What asdict hands back as it is (it deep-copies these to themselves).
_ATOMS = frozenset((int, float, str, bool, type(None)))
_ATOMS_AND_DICT = _ATOMS | {dict}
_FIELD_VALUES = operator.attrgetter(*_METRIC_FIELDS)


def token_agreement(rec: RequestRecord) -> tuple[int | None, int | None, str | None, int | None]:
    """A request's output tokens as asked for, counted from the stream and billed (docs/metrics.md,
    "Token agreement"): RequestMetrics' tokens_asked, tokens_streamed, tokens_streamed_source and
    tokens_billed, in that order (a tuple: a dict cost each request's measure ~0.4 us, issue 42).
    Counted: by the local tokenizer when one is set, else the output-bearing events (one token
    each: a server that packs several into an event shows as billed > streamed, which the
    summary's tokens_per_event tells apart). A whole body or an embedding streamed none."""
    streamed: int | None = None
    source: str | None = None
    if rec.inputs is None:
        if rec.tokenizer_tokens is not None:
            streamed, source = int(rec.tokenizer_tokens), "tokenizer"
        elif rec.stream:
            streamed, source = len(rec.output_times_ns), "events"
    billed = rec.usage.get("completion_tokens") if rec.inputs is None else None
    return rec.max_tokens, streamed, source, int(billed) if billed is not None else None


def _seconds(a: int | None, b: int | None) -> float | None:
    if a is None or b is None:
        return None
    return (a - b) / NS_PER_S


def request_metrics(rec: RequestRecord) -> RequestMetrics:
    """The per-request scalars of docs/metrics.md, 'Per request'."""
    return measure(rec)[0]


def measure(rec: RequestRecord) -> tuple[RequestMetrics, np.ndarray]:
    """request_metrics() and the token layout they were computed with."""
    tokens, source = output_tokens(rec)
    n = len(rec.output_times_ns)
    decode_tps = tpot_s = None
    layout = event_tokens(rec, tokens)
    span = decode_span(rec.output_times_ns, layout)
    if span is not None and span[0] > 0 and span[1] > 0:
        decode_tps = span[0] / (span[1] / NS_PER_S)
        tpot_s = 1.0 / decode_tps
    ttft = _seconds(rec.first_output_ns, rec.t_send_ns)
    e2e = _seconds(rec.end_ns, rec.t_send_ns)
    asked, streamed, streamed_source, billed = token_agreement(rec)
    # The fields in their order, as a dict made into the object without the dataclass's __init__
    # (issue 42: ~2 us of every request); tests/measure/test_short_request_paths.py holds it to
    # RequestMetrics(**fields).
    fields_ = {
        "index": rec.index,
        "warmup": rec.warmup,
        "ok": rec.ok,
        "error": rec.error,
        "status": rec.status,
        "t_send_ns": rec.t_send_ns,
        "t_done_ns": rec.t_done_ns,
        "ttft_s": ttft,
        "ttfat_s": _seconds(rec.first_answer_ns, rec.t_send_ns),
        "e2e_s": e2e,
        "tpot_s": tpot_s,
        "decode_tps": decode_tps,
        "user_tps": tokens / e2e if e2e and rec.inputs is None else None,
        "output_tokens": tokens,
        "token_source": source,
        "output_events": n,
        "tokens_per_event": (tokens / n) if n else None,
        "prompt_tokens": rec.usage.get("prompt_tokens"),
        "schedule_lag_s": _seconds(rec.t_send_ns, rec.t_sched_ns),
        "send_overhead_s": _seconds(rec.t_send_ns, rec.t_submit_ns),
        "ttft_sched_s": _seconds(rec.first_output_ns, rec.t_sched_ns),
        "e2e_sched_s": _seconds(rec.end_ns, rec.t_sched_ns),
        "e2e_500_s": e2e_for(500, ttft, tpot_s),
        "server_timings": read_server_timings(rec.server_timings, rec.usage, ttft, tpot_s),
        "ttfb_s": ttfb_s(rec),
        "stream": rec.stream,
        "inputs": rec.inputs,
        "embedding_dim": rec.embedding_dim,
        "images": rec.images,
        "image_bytes": rec.image_bytes,
        "image_pixels": rec.image_pixels,
        "tokens_asked": asked,
        "tokens_streamed": streamed,
        "tokens_streamed_source": streamed_source,
        "tokens_billed": billed,
    }
    m = object.__new__(RequestMetrics)
    m.__dict__ = fields_
    return m, layout


# ---- distributions --------------------------------------------------------------------------


def empty_distribution() -> dict[str, Any]:
    d: dict[str, Any] = {k: None for k in DISTRIBUTION_KEYS}
    d["count"] = 0
    return d


def _p50_ci_ranks(n: int) -> tuple[int, int]:
    """1-based order-statistic ranks bracketing the median with ~95% confidence."""
    half = 1.96 * math.sqrt(n) / 2
    lo = max(1, math.floor(n / 2 - half))
    hi = min(n, math.ceil(1 + n / 2 + half))
    return lo, hi


def distribution(values: Iterable[float | None], *, scratch: bool = False) -> dict[str, Any]:
    """Exact statistics of samples (None and NaN dropped): docs/metrics.md, 'Distributions'.

    scratch: `values` is a float64 array the caller no longer needs, sorted here in place instead
    of copied (a run's finish, whose memory is a few columns: issue 27)."""
    if isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=np.float64)
        if scratch and arr is values:
            arr.sort()
        else:
            arr = np.sort(arr)
    else:
        arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
        arr.sort()
    if arr.size and np.isnan(arr[-1]):  # np.sort puts NaNs last: a view without them
        arr = arr[: int(np.searchsorted(arr, np.nan))]
    n = int(arr.size)
    if n == 0:
        return empty_distribution()
    mean = float(arr.mean())
    stddev = float(arr.std(ddof=1)) if n > 1 else 0.0
    pct = np.percentile(arr, PERCENTILES, method="inverted_cdf")
    half = _t975(n - 1) * stddev / math.sqrt(n) if n > 1 else 0.0
    lo, hi = _p50_ci_ranks(n)
    out: dict[str, Any] = {"count": n, "mean": mean, "stddev": stddev, "min": float(arr[0])}
    for key, value in zip(PERCENTILE_KEYS, pct, strict=True):
        out[key] = float(value)
    out["max"] = float(arr[-1])
    out["mean_ci95"] = [mean - half, mean + half]
    out["p50_ci95"] = [float(arr[lo - 1]), float(arr[hi - 1])]
    return out


def histogram_distribution(hist: Any, scale: float = 1.0 / NS_PER_S) -> dict[str, Any]:
    """The same statistics from a pytps.Histogram (percentiles within its stated error)."""
    n = int(hist.count)
    if n == 0:
        return empty_distribution()
    mean = hist.mean
    # The histogram's stddev is the population one; the report uses the sample one.
    stddev = hist.stddev * math.sqrt(n / (n - 1)) if n > 1 else 0.0
    half = _t975(n - 1) * stddev / math.sqrt(n) if n > 1 else 0.0
    lo, hi = _p50_ci_ranks(n)
    pct = hist.percentiles(list(PERCENTILES))
    out: dict[str, Any] = {"count": n, "mean": mean * scale, "stddev": stddev * scale, "min": hist.min * scale}
    for key, value in zip(PERCENTILE_KEYS, pct, strict=True):
        out[key] = value * scale
    out["max"] = hist.max * scale
    out["mean_ci95"] = [(mean - half) * scale, (mean + half) * scale]
    out["p50_ci95"] = [
        hist.value_at_percentile(100.0 * (lo - 0.5) / n) * scale,
        hist.value_at_percentile(100.0 * (hi - 0.5) / n) * scale,
    ]
    return out


# ---- run level ------------------------------------------------------------------------------


def steady_intervals_of(
    t_send_ns: np.ndarray, finish_ns: np.ndarray, target: int, block: int = 1 << 18
) -> list[tuple[int, int]]:
    """Intervals during which at least 95% of `target` requests were in flight, each request from
    its t_send to its finish (docs/metrics.md, "steady window"). The level is taken after every
    event of an instant (a request ending as another starts leaves no gap); the instants are
    walked `block` at a time, so memory stays bounded however many requests there were."""
    if target <= 0 or len(t_send_ns) == 0:
        return []
    starts = np.sort(np.asarray(t_send_ns, dtype=np.int64))
    ends = np.sort(np.asarray(finish_ns, dtype=np.int64))
    return steady_intervals_sorted(starts, ends, target, block)


def steady_intervals_sorted(
    starts: np.ndarray, ends: np.ndarray, target: int, block: int = 1 << 18
) -> list[tuple[int, int]]:
    """steady_intervals_of() of sends and finishes already sorted (int64 ns): a run's finish sorts
    its own copies in place instead of making two more."""
    if target <= 0 or len(starts) == 0:
        return []
    threshold = math.ceil(0.95 * target)
    out: list[tuple[int, int]] = []
    opened: int | None = None
    i = j = 0
    while i < len(starts) or j < len(ends):
        # The instants up to `upper` are complete in both arrays once both blocks are taken.
        upper = min(
            starts[min(i + block, len(starts)) - 1] if i < len(starts) else np.iinfo(np.int64).max,
            ends[min(j + block, len(ends)) - 1] if j < len(ends) else np.iinfo(np.int64).max,
        )
        i2 = int(np.searchsorted(starts, upper, side="right"))
        j2 = int(np.searchsorted(ends, upper, side="right"))
        # Sorted distinct instants. Not np.union1d: its np.unique imports numpy.ma (~7 ms of start-up).
        instants = np.sort(np.concatenate([starts[i:i2], ends[j:j2]]))
        instants = instants[np.concatenate([[True], instants[1:] != instants[:-1]])]
        level = in_flight_at(starts, ends, instants)
        above = level >= threshold
        flips = np.flatnonzero(np.diff(np.concatenate([[opened is not None], above]).astype(np.int8)))
        for k in flips:
            t = int(instants[k])
            if opened is None:
                opened = t
            else:
                if t > opened:
                    out.append((opened, t))
                opened = None
        i, j = i2, j2
    return out


def in_flight_at(sorted_starts_ns: np.ndarray, sorted_ends_ns: np.ndarray, instants_ns: np.ndarray) -> np.ndarray:
    """Requests in flight just after each instant, each request counted from its t_send to its
    finish (both sorted): the level the steady window is cut from, and the report's in-flight plot."""
    return np.searchsorted(sorted_starts_ns, instants_ns, side="right") - np.searchsorted(
        sorted_ends_ns, instants_ns, side="right"
    )


def client_cpu_us_per_token(client_cpu: dict[str, Any], tokens_read: int) -> float | None:
    """The client's CPU per output token it read (docs/metrics.md, "client CPU per token"): the
    CPU of the whole run, so every token read counts, warm-up, probe and failed requests' too."""
    if not tokens_read:
        return None
    cpu_s = client_cpu["loop_thread_s"] + (client_cpu["engine_thread_s"] or 0.0)
    return float(cpu_s / tokens_read * 1e6)
