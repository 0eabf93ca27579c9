"""`pytps agents` as a job (docs/agents.md): agents replaying trajectories or running live tool
loops, the run's files and its row in the results store; or the search for sustained agents (the
most concurrent agents whose turns meet the targets, by pytps.sweep.search's CapacitySearch)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytps.app.agent_search import agents_line as agents_line  # the answer in one line, for the CLI
from pytps.app.agent_search import record_agent_row
from pytps.errors import ConfigError
from pytps.measure.agents import AgentSlo
from pytps.measure.slo import parse_slo_run
from pytps.results.files import AGENT_SEARCH, AGENT_TURNS, AGENTS
from pytps.runner.agents import AgentRun, AgentSettings, agent_work, parse_tool_time, run_agents

__all__ = ["AgentPlan", "AgentsOutcome", "agents", "agents_line"]


@dataclass(frozen=True)
class AgentPlan:
    """What the agents run and how: `trajectories` (synthetic:..., example, a file) or `live`
    tasks with their `tools` file; `tool_time` (S, S:SD, LO-HI, exp:MEAN) for replay's waits; the
    per-turn `slo` tier; `search` with its `slo_run` targets and probe budget; `out` (the folder),
    `store` and `record` (the results store)."""

    trajectories: str | None = None
    live: str | None = None
    tools: str | None = None
    tool_time: str | None = None
    slo: str | None = None
    search: bool = False
    slo_run: str | None = None
    search_max_probes: int = 8
    search_start: int | None = None
    out: str | None = None
    store: str | None = None
    record: bool = True


@dataclass
class AgentsOutcome:
    """The run (None for a search), or the search's result (its probes and bracket)."""

    run: AgentRun | None = None
    search: dict[str, Any] | None = None
    out_dir: Path | None = None


def agents(
    base_url: str, plan: AgentPlan, *, say: Callable[[str], None] = lambda line: None, **settings: Any
) -> AgentsOutcome:
    """Runs the agents (settings: AgentSettings' fields but base_url, tool_time and slo)."""
    tool_time = parse_tool_time(plan.tool_time)
    s = AgentSettings(base_url.rstrip("/"), tool_time=tool_time, slo=AgentSlo.parse(plan.slo), **settings)
    work = agent_work(plan.trajectories, plan.live, plan.tools, tool_time)
    out = Path(plan.out) if plan.out else None
    if plan.search:
        result = _search(s, plan, list(work), say)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / AGENT_SEARCH).write_text(json.dumps(result, indent=1, default=str) + "\n")
        return AgentsOutcome(search=result, out_dir=out)
    run = asyncio.run(run_agents(s, work))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        workload = plan.live or plan.trajectories or "example"
        fingerprint = {"kind": "agents", "api": s.api, "model": s.model, "agents": s.agents, "rate": s.rate,
                       "workload": workload}  # fmt: skip
        doc = {"mode": run.mode, "workload": workload, "fingerprint": fingerprint, "summary": run.summary,
               "agents": [a.as_dict() for a in run.agents]}  # fmt: skip
        (out / AGENTS).write_text(json.dumps(doc, indent=1) + "\n")
        with open(out / AGENT_TURNS, "w", encoding="utf-8") as f:
            for t in run.turn_rows():
                f.write(json.dumps(t.as_dict()) + "\n")
        if plan.record:
            _record(s, plan, workload, run, out)
    return AgentsOutcome(run=run, out_dir=out)


def _record(s: AgentSettings, plan: AgentPlan, workload: str, run: AgentRun, out: Path) -> None:
    """The run in the results store (kind "agents"), its fingerprint made of what ran: the agent
    workload, the load (agents or rate) and the API."""
    summary = run.summary
    figures = {
        "agent_ttft_p50_s": summary["ttft_s"].get("p50"),
        "agent_ttft_p90_s": summary["ttft_s"].get("p90"),
        "agent_time_mean_s": summary["agent_time_s"].get("mean"),
        "agent_output_tps_mean": summary["agent_output_tps"].get("mean"),
        "agent_cached_share_mean": summary["cached_share"].get("mean"),
        "agent_slo_turn_share": summary.get("slo_turn_share"),
        "agent_task_success": summary.get("task_success"),
        "agent_tool_call_validity": summary.get("tool_call_validity"),
    }
    record_agent_row(
        plan.store,
        s,
        out,
        summary,
        figures,
        kind="agents",
        workload={"kind": "agents", "agents": workload, "mode": run.mode},
        load={"concurrency": s.agents, "rate": s.rate},
        slo={"per_request_s": plan.slo},
    )


def _search(s: AgentSettings, plan: AgentPlan, work: list[Any], say: Callable[[str], None]) -> dict[str, Any]:
    """The largest N agents whose turns meet plan.slo_run (pytps.app.agent_search, the one path
    of `pytps agents --search` and `pytps sweep --search agents`)."""
    from pytps.app.agent_search import agent_capacity
    from pytps.app.search_plan import SearchPlan

    if not plan.slo_run:
        raise ConfigError("--search needs targets: --slo-run ttft:p90=SECONDS (and/or e2e:p99=...)")
    search = SearchPlan.of(
        {
            "search": "agents",
            "search_start": float(plan.search_start) if plan.search_start else None,
            "search_max_probes": plan.search_max_probes,
        }
    )
    return agent_capacity(s, work, parse_slo_run(plan.slo_run), search, say=say)
