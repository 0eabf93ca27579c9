"""guidellm's benchmarks JSON (`guidellm run --output kind=json`; `benchmarks.json`): `metadata`
(its version), `config.spec` (backend target and model, data, profile) and `benchmarks`, one per
strategy, each with `metrics` (distributions of the successful requests: mean, median, std_dev,
percentiles; times in ms or s as each name says) and `requests` (`successful`, `errored`,
`incomplete`: the requests it sampled, each with its start and end, TTFT, tokens, and in
`info.timings` its first and last token iterations and how many iterations carried tokens). Each
benchmark is imported as its own run."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pytps.results.importers.imported import ImportedRequest, ImportedRun, first_event_tokens

TOOL = "guidellm"
#: Its metric names -> pytps's distributions, with the factor to seconds.
_DISTRIBUTIONS = {
    "time_to_first_token_ms": ("ttft_s", 1e-3),
    "time_per_output_token_ms": ("tpot_s", 1e-3),
    "inter_token_latency_ms": ("itl_s", 1e-3),
    "request_latency": ("e2e_s", 1.0),
}
_PERCENTILES = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p999"}


def detect(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list) and "aiperf_version" not in data


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def tpot_from_span(span_s: float | None, tokens: int | None, events: int | None) -> float | None:
    """pytps's TPOT from the first and last token-carrying events' distance, the tokens and the
    events that carried them, laid evenly (docs/metrics.md, "token layout")."""
    if span_s is None or tokens is None or not events or tokens < events or events < 2:
        return None
    after_first = tokens - first_event_tokens(tokens, events)
    return span_s / after_first if after_first > 0 and span_s > 0 else None


def _request(r: dict[str, Any], ok: bool) -> ImportedRequest:
    info = r.get("info") or {}
    timings = info.get("timings") or {}
    start = _num(r.get("request_start_time")) or _num(timings.get("request_start"))
    first, last = _num(timings.get("first_token_iteration")), _num(timings.get("last_token_iteration"))
    events = timings.get("token_iterations")
    tokens = r.get("output_tokens")
    tokens = int(tokens) if isinstance(tokens, (int, float)) else None
    ttft_ms = _num(r.get("time_to_first_token_ms"))
    span = last - first if first is not None and last is not None else None
    return ImportedRequest(
        ok=ok,
        error=None if ok else str(info.get("error") or "errored"),
        ttft_s=ttft_ms / 1000.0 if ttft_ms is not None else None,
        e2e_s=_num(r.get("request_latency")),
        tpot_s=tpot_from_span(span, tokens, events if isinstance(events, int) else None),
        input_tokens=int(r["prompt_tokens"]) if isinstance(r.get("prompt_tokens"), (int, float)) else None,
        output_tokens=tokens,
        start_s=start,
        request_id=r.get("response_id") or r.get("request_id"),
    )


def _aggregates(benchmark: dict[str, Any]) -> dict[str, Any]:
    metrics = benchmark.get("metrics") or {}
    out: dict[str, Any] = {}
    for key, (name, scale) in _DISTRIBUTIONS.items():
        d = (metrics.get(key) or {}).get("successful")
        if not isinstance(d, dict):
            continue
        stats = {"mean": d.get("mean"), "stddev": d.get("std_dev"), "min": d.get("min"), "max": d.get("max")}
        stats.update({ours: (d.get("percentiles") or {}).get(theirs) for theirs, ours in _PERCENTILES.items()})
        out[name] = {k: v * scale for k, v in ((k, _num(v)) for k, v in stats.items()) if v is not None}
    totals = metrics.get("request_totals") or {}
    duration = _num(benchmark.get("duration"))
    out_tokens = _num(((metrics.get("output_token_count") or {}).get("successful") or {}).get("total_sum"))
    ok = totals.get("successful")
    out.update(
        requests_total=totals.get("total"),
        requests_ok=ok,
        measured_window_s=duration,
        output_tokens_total=out_tokens,
        output_throughput_tps=out_tokens / duration if out_tokens is not None and duration else None,
        request_throughput_rps=ok / duration if isinstance(ok, int) and duration else None,
    )
    return out


def read(data: dict[str, Any], source: str) -> list[ImportedRun]:
    spec = ((data.get("config") or {}).get("spec")) or {}
    backend = spec.get("backend") or {}
    sources = spec.get("data") or []
    first = sources[0] if sources and isinstance(sources[0], dict) else {}
    version = (data.get("metadata") or {}).get("guidellm_version")
    runs = []
    for benchmark in data.get("benchmarks") or []:
        reqs = benchmark.get("requests") or {}
        kept = [_request(r, True) for r in reqs.get("successful") or []]
        kept += [_request(r, False) for r in (reqs.get("errored") or []) + (reqs.get("incomplete") or [])]
        strategy = (benchmark.get("config") or {}).get("strategy") or {}
        aggregates = _aggregates(benchmark)
        start = _num(benchmark.get("start_time"))
        sampled = len(kept) < (aggregates.get("requests_total") or 0)
        runs.append(
            ImportedRun(
                tool=TOOL,
                tool_version=version if isinstance(version, str) else None,
                source=source,
                date_utc=datetime.fromtimestamp(start, timezone.utc).isoformat(timespec="seconds") if start else None,
                model=backend.get("model"),
                base_url=backend.get("target"),
                api="openai-chat" if "chat" in str(backend.get("request_format") or "chat") else "openai-completions",
                input_tokens=str(first["prompt_tokens"]) if first.get("prompt_tokens") else None,
                output_tokens=str(first["output_tokens"]) if first.get("output_tokens") else None,
                concurrency=strategy.get("streams") if strategy.get("type_") == "concurrent" else None,
                rate_rps=_num(strategy.get("rate")),
                # Requests it did not sample are not made up: with none kept, the run is its aggregates.
                requests=kept or None,
                aggregates=aggregates,
                part=f"{strategy.get('type_')}@{strategy.get('streams') or strategy.get('rate') or ''}".rstrip("@"),
                notes=["guidellm kept a sample of the requests: the distributions are the sample's"] if sampled else [],
            )
        )
    return runs
