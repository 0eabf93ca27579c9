"""The figures made of the server's metrics and the client's, each defined once in
docs/metrics.md ("Server metrics"): joules per output token, speculative decoding's acceptance,
the token cross-check and queueing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pytps.measure.server_metrics.series import Series

NS_PER_S = 1_000_000_000
Intervals = Sequence[tuple[int, int]]


def _known(s: Series, name: str) -> list[int]:
    return [i for i, v in enumerate(s.values.get(name, ())) if not math.isnan(v)]


def integrate_power(times_ns: Sequence[int], power_w: Sequence[float]) -> tuple[float, float]:
    """(energy J, error bound J) of power sampled at the scrapes, by the trapezoid rule. Between
    two scrapes h apart the true energy lies within h·min(P) and h·max(P) when power moves
    monotonically between them, so the trapezoid is off by at most h·|ΔP|/2 per step."""
    energy = bound = 0.0
    for i in range(1, len(times_ns)):
        h = (times_ns[i] - times_ns[i - 1]) / NS_PER_S
        energy += h * (power_w[i] + power_w[i - 1]) / 2
        bound += h * abs(power_w[i] - power_w[i - 1]) / 2
    return energy, bound


def energy_figures(series: Sequence[Series], steady: Intervals) -> dict[str, Any] | None:
    """The run's energy from the first URL with an energy counter, else the first with power
    (integrated), and the mean power over the steady window."""
    for s in series:
        idx = _known(s, "energy_j")
        if len(idx) >= 2:
            t = s.times_ns
            span = (t[idx[-1]] - t[idx[0]]) / NS_PER_S
            steady_j = steady_s = 0.0
            for a, b in steady:
                inside = [i for i in idx if a <= t[i] <= b]
                if len(inside) >= 2:
                    steady_j += s.increase("energy_j", inside)
                    steady_s += (t[inside[-1]] - t[inside[0]]) / NS_PER_S
            return {
                "source": "energy counter",
                "url": s.url,
                "energy_j": s.increase("energy_j", idx),
                "error_bound_j": None,
                "span_s": span,
                "steady_power_w": steady_j / steady_s if steady_s > 0 else None,
            }
    for s in series:
        idx = _known(s, "power_w")
        if len(idx) >= 2:
            t = [s.times_ns[i] for i in idx]
            p: list[float] = [s.values["power_w"][i] for i in idx]
            energy, bound = integrate_power(t, p)
            steady_p = [w for tt, w in zip(t, p, strict=True) if any(a <= tt <= b for a, b in steady)]
            return {
                "source": "power integrated",
                "url": s.url,
                "energy_j": energy,
                "error_bound_j": bound,
                "span_s": (t[-1] - t[0]) / NS_PER_S,
                "steady_power_w": sum(steady_p) / len(steady_p) if steady_p else None,
            }
    return None


def _common(sources: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for src in sources:
        if name in src["common"]:
            entry: dict[str, Any] = src["common"][name]
            return entry
    return None


def _delta(entry: dict[str, Any] | None) -> float | None:
    run = entry.get("run") if entry else None
    return run["delta"] if run else None


def derived_figures(
    series: Sequence[Series], sources: Sequence[dict[str, Any]], steady: Intervals, client: dict[str, Any]
) -> dict[str, Any]:
    """client: output_tokens (every request's, warm-up included: the scrapes bracket them all),
    steady_output_throughput_tps, ttft_minus_prompt_s (server_timings' distribution, if any)."""
    out: dict[str, Any] = {}
    tokens = client.get("output_tokens")
    energy = energy_figures(series, steady)
    out["energy"] = energy
    jpt = tpj = steady_jpt = None
    if energy is not None and tokens:
        jpt = energy["energy_j"] / tokens
        tpj = tokens / energy["energy_j"] if energy["energy_j"] > 0 else None
        steady_tps = client.get("steady_output_throughput_tps")
        if energy["steady_power_w"] is not None and steady_tps:
            steady_jpt = energy["steady_power_w"] / steady_tps
    out["joules_per_output_token"] = jpt
    out["output_tokens_per_joule"] = tpj
    out["steady_joules_per_output_token"] = steady_jpt

    drafts = _delta(_common(sources, "spec_decode_drafts"))
    draft_tokens = _delta(_common(sources, "spec_decode_draft_tokens"))
    accepted = _delta(_common(sources, "spec_decode_accepted_tokens"))
    out["spec_decode"] = (
        None
        if not draft_tokens or accepted is None
        else {
            "draft_tokens": draft_tokens,
            "accepted_tokens": accepted,
            "acceptance_rate": accepted / draft_tokens,
            "drafts": drafts,
            "mean_accepted_length": accepted / drafts if drafts else None,
            "client_tokens_per_event": client.get("tokens_per_event"),
        }
    )

    generated = _delta(_common(sources, "generation_tokens"))
    out["token_cross_check"] = (
        None
        if generated is None or tokens is None
        else {
            "server_generation_tokens": generated,
            "client_output_tokens": tokens,
            "difference": generated - tokens,
            "equal": generated == tokens,
            "note": None
            if generated == tokens
            else "the server counted other tokens than this run's: other traffic, or requests it cut short",
        }
    )

    waiting = _common(sources, "requests_waiting")
    running = _common(sources, "requests_running")
    queue_hist = _common(sources, "queue_time_s")
    out["queueing"] = (
        None
        if waiting is None and running is None and queue_hist is None
        else {
            "requests_waiting": (waiting or {}).get("steady") or (waiting or {}).get("run"),
            "requests_running": (running or {}).get("steady") or (running or {}).get("run"),
            "server_queue_time_s": queue_hist,
            "ttft_minus_server_prompt_s": client.get("ttft_minus_prompt_s"),
        }
    )
    return out
