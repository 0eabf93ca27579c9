"""Console lines for the workload figures (multi-turn sessions, trace replays, the prefix cache,
latency by length), from a saved results.json; each only when its keys are there."""

from __future__ import annotations

from typing import Any


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.1f} ms"


def _bins(bins: list[dict[str, Any]]) -> str:
    return " · ".join(f"{b['lo']}-{b['hi'] - 1}: {_ms(b['p50'])} ({b['count']})" for b in bins)


def workload_lines(results: dict[str, Any]) -> list[str]:
    meta = results.get("metadata") or {}
    s = results.get("summary") or {}
    wl = meta.get("workload") or {}
    lines = []
    trace = wl.get("trace")
    if trace:
        lag = (s.get("schedule_lag_s") or {}).get("p99")
        lines.append(
            f"trace {trace['format']} {trace['path']}: {trace['requests']} of {trace['rows']} rows over "
            f"{trace['span_s']:.1f} s (speed-up {trace['speedup']:g}) · "
            f"{trace['skipped_failed']} failed rows skipped · {trace['outside_window']} outside the window · "
            f"clipped {trace['clipped_input']} inputs, "
            f"{trace['clipped_output']} outputs · schedule lag p99 {_ms(lag)}"
        )
    sessions = wl.get("sessions")
    if sessions:
        lines.append(
            f"sessions: {s.get('sessions_measured', 0)} measured of {sessions['turns']} turns "
            f"(concurrency = sessions in flight; think time {sessions['think_time_s']} s)"
        )
        for t in s.get("per_turn") or []:
            cached = t.get("cached_tokens_mean")
            prompt = t.get("prompt_tokens_mean")
            decode = t.get("decode_tps_p50")
            lines.append(
                f"  turn {t['turn']}: TTFT p50 {_ms(t.get('ttft_p50_s'))} · decode p50 "
                + ("-" if decode is None else f"{decode:,.0f} tok/s")
                + " · prompt "
                + ("-" if prompt is None else f"{prompt:,.0f} tok")
                + ("" if cached is None else f" ({cached:,.0f} cached)")
                + f" · n {t['requests']}"
            )
    cache = s.get("cache") or {}
    if cache.get("hit_rate") is not None:
        c, u = cache["ttft_mostly_cached_s"], cache["ttft_mostly_uncached_s"]
        lines.append(
            f"prefix cache hit rate {cache['hit_rate']:.1%} ({cache['cached_tokens']:,} of "
            f"{cache['prompt_tokens']:,} prompt tokens) · TTFT p50 mostly cached {_ms(c['p50'])} ({c['count']}) · "
            f"mostly uncached {_ms(u['p50'])} ({u['count']})"
        )
    if len(s.get("ttft_by_prompt_tokens") or []) > 1:
        lines.append("TTFT p50 by prompt tokens: " + _bins(s["ttft_by_prompt_tokens"]))
    if len(s.get("e2e_by_output_tokens") or []) > 1:
        lines.append("E2E p50 by output tokens: " + _bins(s["e2e_by_output_tokens"]))
    images = s.get("images")
    if images:
        lines.append(
            f"images: {images['images_total']:,} in {images['requests']:,} requests · "
            f"{images['image_bytes_total'] / 1e6:,.1f} MB · "
            f"{images['pixels_per_request_mean'] / 1e6:,.2f} Mpx per request · "
            "TTFT p50 by images: "
            + " · ".join(f"{b['images']}: {_ms(b['ttft_p50_s'])} ({b['requests']})" for b in images["ttft_by_images"])
        )
        if len(images["ttft_by_pixels"]) > 1:
            lines.append("TTFT p50 by image pixels per request: " + _bins(images["ttft_by_pixels"]))
    return lines
