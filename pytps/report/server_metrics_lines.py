"""Console lines for the server's own metrics (--server-metrics, docs/server-metrics.md), from a
saved results.json: shown under the server-timing rows, each only when its figures are there."""

from __future__ import annotations

from typing import Any


def _num(v: float | None, fmt: str = ".3g") -> str:
    return "-" if v is None else format(v, fmt)


def _hist(name: str, h: dict[str, Any] | None) -> str | None:
    if not h or not h.get("count"):
        return None
    p = [_num(None if h.get(k) is None else h[k] * 1e3, ".1f") for k in ("p50", "p90", "p99")]
    return f"{name} p50/p90/p99 {'/'.join(p)} ms ({h['count']:.0f})"


def _gauge(name: str, g: dict[str, Any] | None, scale: float = 1.0, fmt: str = ".1f") -> str | None:
    fig = (g or {}).get("steady") or (g or {}).get("run")
    if not fig:
        return None
    return f"{name} mean {format(fig['mean'] * scale, fmt)} max {format(fig['max'] * scale, fmt)}"


def server_metrics_lines(results: dict[str, Any]) -> list[str]:
    s = results.get("summary") or {}
    sm = s.get("server_metrics")
    if not sm:
        return []
    lines = []
    for src in sm.get("sources") or []:
        unc = src.get("uncertainty_ms") or {}
        engines = ", ".join(src.get("engines") or []) or "no known engine"
        head = f"server metrics {src['url']} ({engines}): {src['scrapes']} scrapes, ±{_num(unc.get('p50'))} ms" + (
            f", {src['failed']} failed ({'; '.join(src.get('errors') or [])})" if src.get("failed") else ""
        )
        c = src.get("common") or {}
        parts = [
            _gauge("running", c.get("requests_running")),
            _gauge("waiting", c.get("requests_waiting")),
            _gauge("KV cache %", c.get("kv_cache_usage"), 100.0),
            _gauge("power W", c.get("power_w")),
            _gauge("GPU util %", c.get("gpu_utilization"), 100.0),
        ]
        hists = [_hist(f"server {k.removesuffix('_s').upper()}", c.get(k)) for k in ("ttft_s", "itl_s", "e2e_s")]
        hists.append(_hist("server queue time", c.get("queue_time_s")))
        body = [p for p in parts + hists if p]
        lines.append(head + (" · " + " · ".join(body) if body else ""))
    cross = sm.get("token_cross_check")
    if cross:
        same = "equal" if cross["equal"] else f"differ by {cross['difference']:+.0f}: {cross['note']}"
        lines.append(
            f"server generation tokens {cross['server_generation_tokens']:,.0f} vs pytps output tokens "
            f"{cross['client_output_tokens']:,}: {same}"
        )
    energy = sm.get("energy")
    if energy:
        bound = f" ± {energy['error_bound_j']:.3g}" if energy.get("error_bound_j") is not None else ""
        lines.append(
            f"energy {energy['energy_j']:,.4g}{bound} J ({energy['source']}) · "
            f"{_num(s.get('joules_per_output_token'), '.4g')} J/output token · "
            f"{_num(s.get('output_tokens_per_joule'), '.4g')} tokens/J · "
            f"steady {_num(sm.get('steady_joules_per_output_token'), '.4g')} J/token"
        )
    spec = sm.get("spec_decode")
    if spec:
        lines.append(
            f"speculative decoding: acceptance {spec['acceptance_rate']:.1%} "
            f"({spec['accepted_tokens']:,.0f} of {spec['draft_tokens']:,.0f} draft tokens) · "
            f"mean accepted length {_num(spec.get('mean_accepted_length'))} per step · "
            f"pytps tokens per event {_num(spec.get('client_tokens_per_event'))}"
        )
    return lines
