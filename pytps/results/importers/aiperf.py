"""aiperf's profile export: `profile_export.jsonl` (one record per request: `metadata` with the
request's wall-clock `request_start_ns` and its benchmark phase, `metrics` each as {value, unit},
`error`) and `profile_export_aiperf.json` (aggregates only: each metric's unit, avg, std, p50, p90,
p95, p99, min, max, count, with aiperf's version and its input config)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.errors import read_json_if_any
from pytps.results.importers.imported import ImportedRequest, ImportedRun

TOOL = "aiperf"
_TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
#: aiperf's aggregate keys -> pytps's distributions (its inter_token_latency is a request's
#: (latency − TTFT) / (tokens − 1): pytps's TPOT of a stream of one token per chunk).
_DISTRIBUTIONS = {
    "time_to_first_token": "ttft_s",
    "inter_token_latency": "tpot_s",
    "request_latency": "e2e_s",
    "inter_chunk_latency": "chunk_gap_s",
}
_STATS = {
    "avg": "mean",
    "std": "stddev",
    "min": "min",
    "max": "max",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
}


def detect(data: Any) -> bool:
    if isinstance(data, list):
        return bool(data) and all(isinstance(r, dict) and "metadata" in r and "metrics" in r for r in data[:5])
    return isinstance(data, dict) and "aiperf_version" in data


#: The aggregate export aiperf writes beside its per-request one: the run's model, endpoint, load and version.
SUMMARY_FILE = "profile_export_aiperf.json"


def read(data: Any, source: str) -> list[ImportedRun]:
    if not isinstance(data, list):
        return [_aggregates(data, source)]
    run = _records(data, source)
    beside = Path(source).parent / SUMMARY_FILE
    summary = read_json_if_any(beside)
    if isinstance(summary, dict):
        described = _aggregates(summary, str(beside))
        run.tool_version, run.model, run.base_url = described.tool_version, described.model, described.base_url
        run.concurrency, run.date_utc = described.concurrency, described.date_utc or run.date_utc
        run.notes[0] = f"model, endpoint, load and version from {SUMMARY_FILE} beside it"
    return [run]


def _seconds(metric: Any) -> float | None:
    if not isinstance(metric, dict):
        return None
    value, scale = metric.get("value"), _TO_S.get(str(metric.get("unit")))
    return value * scale if isinstance(value, (int, float)) and scale is not None else None


def _count(metric: Any) -> int | None:
    value = metric.get("value") if isinstance(metric, dict) else None
    return int(value) if isinstance(value, (int, float)) else None


def _request(record: dict[str, Any]) -> ImportedRequest:
    m = record.get("metrics") or {}
    meta = record.get("metadata") or {}
    error = record.get("error")
    gaps = m.get("inter_chunk_latency")
    gap_values = gaps.get("value") if isinstance(gaps, dict) else None
    scale = _TO_S.get(str(gaps.get("unit"))) if isinstance(gaps, dict) else None
    start = meta.get("request_start_ns")
    # Output tokens as pytps counts them: the server's usage first, else aiperf's own count.
    tokens = _count(m.get("usage_completion_tokens"))
    if tokens is None:
        tokens = _count(m.get("output_sequence_length"))
    prompt = _count(m.get("usage_prompt_tokens"))
    return ImportedRequest(
        ok=error is None,
        error=None if error is None else str(error.get("message") if isinstance(error, dict) else error),
        ttft_s=_seconds(m.get("time_to_first_token")),
        e2e_s=_seconds(m.get("request_latency")),
        chunk_gaps_s=[g * scale for g in gap_values] if isinstance(gap_values, list) and scale else None,
        tpot_s=_seconds(m.get("inter_token_latency")) if not isinstance(gap_values, list) else None,
        input_tokens=prompt if prompt is not None else _count(m.get("input_sequence_length")),
        output_tokens=tokens,
        start_s=start / 1e9 if isinstance(start, int) else None,
        request_id=meta.get("x_request_id"),
    )


def _records(records: list[dict[str, Any]], source: str) -> ImportedRun:
    measured = [r for r in records if (r.get("metadata") or {}).get("benchmark_phase", "profiling") == "profiling"]
    requests = [_request(r) for r in measured]
    starts = [r.start_s for r in requests if r.start_s is not None]
    ends = [int(end) for r in measured if isinstance(end := (r.get("metadata") or {}).get("request_end_ns"), int)]
    window = (max(ends) / 1e9 - min(starts)) if starts and ends else None
    ok = [r for r in requests if r.ok]
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    date = datetime.fromtimestamp(min(starts), timezone.utc).isoformat(timespec="seconds") if starts else None
    return ImportedRun(
        tool=TOOL,
        tool_version=None,
        source=source,
        date_utc=date,
        api="openai-chat",
        input_tokens=_same([_count((r.get("metrics") or {}).get("input_sequence_length")) for r in measured]),
        output_tokens=str(next(iter({r.output_tokens for r in ok})))
        if len({r.output_tokens for r in ok}) == 1
        else None,
        requests=requests,
        aggregates={
            "requests_total": len(requests),
            "requests_ok": len(ok),
            "measured_window_s": window,
            "output_throughput_tps": out_tokens / window if window else None,
            "request_throughput_rps": len(ok) / window if window else None,
        },
        notes=[
            "the per-request export names neither model, endpoint nor load: see profile_export_aiperf.json beside it",
        ],
    )


def _aggregates(data: dict[str, Any], source: str) -> ImportedRun:
    aggregates: dict[str, Any] = {}
    for key, name in _DISTRIBUTIONS.items():
        m = data.get(key)
        scale = _TO_S.get(str(m.get("unit"))) if isinstance(m, dict) else None
        if isinstance(m, dict) and scale is not None:
            aggregates[name] = {
                pytps: m[stat] * scale for stat, pytps in _STATS.items() if isinstance(m.get(stat), (int, float))
            }
    ok = _avg(data, "request_count")
    errors = _avg(data, "error_request_count") or 0
    aggregates.update(
        requests_ok=int(ok) if ok is not None else None,
        requests_total=int(ok + errors) if ok is not None else None,
        # Output tokens by the server's usage where aiperf kept it (pytps's count), else aiperf's own.
        output_tokens_total=_int(_avg(data, "total_usage_completion_tokens") or _avg(data, "total_output_tokens")),
        input_tokens_total=_int(_avg(data, "total_usage_prompt_tokens") or _avg(data, "total_isl")),
        output_throughput_tps=_avg(data, "output_token_throughput"),
        request_throughput_rps=_avg(data, "request_throughput"),
        measured_window_s=_avg(data, "benchmark_duration"),
    )
    cfg = data.get("input_config") or {}
    endpoint = cfg.get("endpoint") or {}
    models = (cfg.get("models") or {}).get("items") if isinstance(cfg.get("models"), dict) else cfg.get("models")
    model = None
    if isinstance(models, list) and models:
        first = models[0]
        model = first.get("name") if isinstance(first, dict) else str(first)
    urls = endpoint.get("urls") if isinstance(endpoint, dict) else None
    start = data.get("start_time")
    date = None
    if isinstance(start, str):
        try:
            date = datetime.fromisoformat(start).astimezone(timezone.utc).isoformat(timespec="seconds")
        except ValueError:
            date = None
    return ImportedRun(
        tool=TOOL,
        tool_version=data.get("aiperf_version"),
        source=source,
        date_utc=date,
        model=model,
        base_url=urls[0] if isinstance(urls, list) and urls else None,
        api="openai-chat",
        concurrency=_concurrency(cfg),
        requests=None,
        aggregates=aggregates,
        notes=["aggregates only: profile_export_aiperf.json keeps no requests (profile_export.jsonl does)"],
    )


def _same(values: list[int | None]) -> str | None:
    return str(values[0]) if values and values[0] is not None and all(v == values[0] for v in values) else None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _avg(data: dict[str, Any], key: str) -> float | None:
    m = data.get(key)
    value = m.get("avg") if isinstance(m, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _concurrency(cfg: dict[str, Any]) -> int | None:
    phases = cfg.get("phases")
    items = phases.get("items") if isinstance(phases, dict) else phases
    for phase in items if isinstance(items, list) else []:
        if isinstance(phase, dict) and isinstance(phase.get("concurrency"), int):
            return int(phase["concurrency"])
    return None
