"""vLLM's `vllm bench serve` result JSON (`--save-result`; the older `benchmarks/benchmark_serving.py`
writes the same): its aggregates in milliseconds (`mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`,
...), and with `--save-detailed` the per-request arrays `ttfts` (s), `itls` (s, each request's gaps
between chunks after the first), `input_lens`, `output_lens`, `errors` ("" when it succeeded) and,
from newer versions, `latencies` (s: each request's E2E) and `start_times` (its perf counter). An
older file without `latencies` gives requests without E2E."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from pytps.results.importers.imported import ImportedRequest, ImportedRun

TOOL = "vllm-bench-serve"
#: Its aggregate keys: {stat}_{metric}_ms, stat mean, median, std or pNN.
_AGGREGATE = re.compile(r"^(mean|median|std|p[0-9.]+)_(ttft|tpot|itl|e2el)_ms$")
_METRIC = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2el": "e2e_s"}


def detect(data: Any) -> bool:
    return isinstance(data, dict) and "median_ttft_ms" in data and "completed" in data


def _stat_name(stat: str) -> str | None:
    if stat == "mean":
        return "mean"
    if stat == "median":
        return "p50"
    if stat == "std":
        return "stddev"
    p = stat[1:]
    return {"50": "p50", "90": "p90", "95": "p95", "99": "p99", "99.9": "p999"}.get(p)


def _date(text: Any) -> tuple[str | None, str | None]:
    """Its `date` is %Y%m%d-%H%M%S in the benchmarking machine's local time."""
    if not isinstance(text, str):
        return None, None
    try:
        local = datetime.strptime(text, "%Y%m%d-%H%M%S")
    except ValueError:
        return None, f"date {text!r} not understood"
    note = "the date is the benchmarking machine's local time, read as this machine's local time"
    return local.astimezone(timezone.utc).isoformat(timespec="seconds"), note


def _same(values: list[Any]) -> str | None:
    """A length spec: N when every request had N."""
    return str(values[0]) if values and all(v == values[0] for v in values) else None


def read(data: dict[str, Any], source: str) -> list[ImportedRun]:
    date_utc, note = _date(data.get("date"))
    rate = data.get("request_rate")
    rate_rps = float(rate) if isinstance(rate, (int, float)) and math.isfinite(rate) else None
    aggregates: dict[str, Any] = {}
    for key, value in data.items():
        m = _AGGREGATE.match(key)
        name = _stat_name(m.group(1)) if m else None
        if m and name and isinstance(value, (int, float)):
            aggregates.setdefault(_METRIC[m.group(2)], {})[name] = value / 1000.0
    completed = int(data.get("completed") or 0)
    errors = data.get("errors")
    failed = data.get("failed")
    total = len(errors) if isinstance(errors, list) else completed + (failed if isinstance(failed, int) else 0)
    duration = data.get("duration")
    aggregates.update(
        requests_total=total,
        requests_ok=completed,
        output_tokens_total=data.get("total_output_tokens"),
        input_tokens_total=data.get("total_input_tokens"),
        output_throughput_tps=data.get("output_throughput"),
        request_throughput_rps=data.get("request_throughput"),
        measured_window_s=duration,
    )
    requests = _requests(data)
    run = ImportedRun(
        tool=TOOL,
        tool_version=data.get("vllm_version") if isinstance(data.get("vllm_version"), str) else None,
        source=source,
        date_utc=date_utc,
        model=data.get("model_id"),
        api="openai-chat" if data.get("backend") in ("openai-chat", "vllm-chat") else data.get("backend"),
        input_tokens=_same(data.get("input_lens") or []),
        output_tokens=_same([n for n, e in zip(data.get("output_lens") or [], errors or [], strict=False) if not e]),
        concurrency=data.get("max_concurrency"),
        rate_rps=rate_rps,
        requests=requests,
        aggregates=aggregates,
        notes=[n for n in (note,) if n],
    )
    if requests is None:
        run.notes.append("aggregates only: the file was saved without --save-detailed")
    return [run]


def _requests(data: dict[str, Any]) -> list[ImportedRequest] | None:
    ttfts, itls, errors = data.get("ttfts"), data.get("itls"), data.get("errors")
    if not (isinstance(ttfts, list) and isinstance(itls, list) and isinstance(errors, list)):
        return None
    n = len(ttfts)
    ins = _column(data, "input_lens", n)
    outs = _column(data, "output_lens", n)
    e2es = _column(data, "latencies", n)
    starts = _column(data, "start_times", n)
    out = []
    for i, (ttft, gaps, err) in enumerate(zip(ttfts, itls, errors, strict=True)):
        ok = not err
        out.append(
            ImportedRequest(
                ok=ok,
                error=str(err) if err else None,
                ttft_s=float(ttft) if ok else None,
                e2e_s=e2es[i] if ok else None,
                chunk_gaps_s=[float(g) for g in gaps] if ok else None,
                input_tokens=ins[i],
                output_tokens=outs[i] if ok else None,
                start_s=starts[i],
            )
        )
    return out


def _column(data: dict[str, Any], key: str, n: int) -> list[Any]:
    """A per-request array, or Nones where the file has none of that length."""
    values = data.get(key)
    return list(values) if isinstance(values, list) and len(values) == n else [None] * n
