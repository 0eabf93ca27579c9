"""An agent run's console lines and its Chrome trace (docs/agents.md, "Reading the output").

The trace (Chrome's trace-event JSON, opened by Perfetto or chrome://tracing) has one row per
agent: each turn a slice (its TTFT as a nested slice) and each tool wait a slice after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytps.measure.agents import AgentRow

__all__ = ["agent_lines", "agent_trace"]


def _ms(d: Mapping[str, Any], key: str = "p50") -> str:
    v = d.get(key)
    return "-" if v is None else f"{v * 1e3:.1f}"


def _mean_sd(d: Mapping[str, Any], scale: float = 1.0, unit: str = "") -> str:
    if not d.get("count"):
        return "-"
    mean, sd = d["mean"] * scale, (d["stddev"] or 0.0) * scale
    return f"{mean:.3g} ± {sd:.2g}{unit} [{d['min'] * scale:.3g} … {d['max'] * scale:.3g}] (n={d['count']})"


def agent_lines(summary: Mapping[str, Any], mode: str) -> list[str]:
    """What `pytps agents` prints: mean ± σ [min … max] (n) for each figure."""
    s = summary
    lines = [
        f"agents: {s['agents']} ({mode}), {s['agents_finished']} finished; turns: {s['turns']} ({s['turns_ok']} ok)",
        "  turn TTFT (ms)           "
        f"p50 {_ms(s['ttft_s'])}  p90 {_ms(s['ttft_s'], 'p90')}  p99 {_ms(s['ttft_s'], 'p99')}",
        f"  turn input tokens        {_mean_sd(s['input_tokens'])}",
        f"  turn cached share        {_mean_sd(s['cached_share'], 100, '%')}",
        f"  turn decode (tok/s)      {_mean_sd(s['turn_decode_tps'])}",
        f"  agent time through (s)   {_mean_sd(s['agent_time_s'])}",
        f"    model time (s)         {_mean_sd(s['agent_model_s'])}",
        f"    tool time (s)          {_mean_sd(s['agent_tool_s'])}",
        f"  agent output (tok/s)     {_mean_sd(s['agent_output_tps'])}",
        f"  steps per task           {_mean_sd(s['steps_per_task'])}",
    ]
    if s["tool_calls"]:
        lines.append(
            f"  tool calls               {s['tool_calls']}, {s['invalid_tool_calls']} invalid "
            f"(validity {100 * s['tool_call_validity']:.1f}%)"
        )
    if s["tasks_graded"]:
        lo, hi = s["task_success_ci95"]
        lines.append(
            f"  task success             {s['tasks_succeeded']}/{s['tasks_graded']} = "
            f"{100 * s['task_success']:.1f}% (95% CI {100 * lo:.1f}–{100 * hi:.1f}%)"
        )
    if "slo_turn_share" in s and s["slo_turn_share"] is not None:
        slo = s["slo"]
        tier = ", ".join(f"{k} {v:g}" for k, v in (("TTFT ≤", slo["ttft_s"]), ("tok/s ≥", slo["tps"])) if v is not None)
        lines.append(f"  turns meeting the SLO    {100 * s['slo_turn_share']:.1f}% ({tier})")
    return lines


def agent_trace(agents: Sequence[AgentRow]) -> dict[str, Any]:
    """Chrome trace events: pid 1, one tid per agent; times in µs from the first send."""
    turns = [t for a in agents for t in a.turns]
    if not turns:
        return {"traceEvents": [], "displayTimeUnit": "ms"}
    t0 = min(t.t_send_ns for t in turns)
    events: list[dict[str, Any]] = []
    for a in agents:
        events.append(
            {"ph": "M", "pid": 1, "tid": a.agent, "name": "thread_name", "args": {"name": f"agent {a.agent}"}}
        )
        for t in a.turns:
            start = (t.t_send_ns - t0) / 1e3
            end = ((t.t_end_ns or t.t_send_ns) - t0) / 1e3
            args = {
                "trajectory": a.trajectory,
                "input_tokens": t.input_tokens,
                "cached_tokens": t.cached_tokens,
                "output_tokens": t.output_tokens,
                "calls": t.calls,
                "invalid_calls": t.invalid_calls,
            }
            events.append(
                {
                    "ph": "X",
                    "pid": 1,
                    "tid": a.agent,
                    "name": f"turn {t.turn}",
                    "cat": "model",
                    "ts": start,
                    "dur": max(0.0, end - start),
                    "args": args,
                }
            )
            if t.ttft_s is not None:
                events.append(
                    {
                        "ph": "X",
                        "pid": 1,
                        "tid": a.agent,
                        "name": "ttft",
                        "cat": "model",
                        "ts": start,
                        "dur": t.ttft_s * 1e6,
                    }
                )
            if t.tool_s > 0 and t is not a.turns[-1]:
                events.append(
                    {
                        "ph": "X",
                        "pid": 1,
                        "tid": a.agent,
                        "name": "tool wait",
                        "cat": "tool",
                        "ts": end,
                        "dur": t.tool_s * 1e6,
                    }
                )
    return {"traceEvents": events, "displayTimeUnit": "ms"}
