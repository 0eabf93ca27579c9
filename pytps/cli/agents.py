"""`pytps agents`: replay agent trajectories, or run live tool loops, with N concurrent agents
(or agents arriving at a rate), and report per-turn and per-agent figures (docs/agents.md)."""

from __future__ import annotations

import argparse

EXAMPLES = """examples:
  pytps agents http://127.0.0.1:8000 --agents 8 --agents synthetic:turns=20-60,context=32000,count=16
  pytps agents http://127.0.0.1:8000 --agents 4 --agents example --api anthropic --slo ttft=0.5,tps=20
  pytps agents http://127.0.0.1:8000 --agents 2 --live tasks:arithmetic:10 --tools tools.json --step-cap 8
  pytps agents http://127.0.0.1:8000 --agent-rate 2 --agents my_agents.jsonl --tool-time exp:1 --out results/agents
"""

HELP = "replay agent trajectories or run live tool loops with concurrent agents"
DESCRIPTION = (
    "Each agent works through a trajectory turn by turn (the recorded context, output length and tool "
    "time), or runs a live tool loop (the model's own tool calls answered by mocked tools until it answers "
    "without a call), with at most one request in flight. Per turn: TTFT against input tokens and the share "
    "served from cache; per agent: time through split into model and tool time, output speed; tool-call "
    "validity and task success. Figures are defined in docs/metrics.md, 'Agents'."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="the endpoint's base URL (http://127.0.0.1:8000)")


def run(args: argparse.Namespace) -> int:
    import json
    from dataclasses import fields
    from pathlib import Path

    from pytps.app.agents import AgentPlan, agents, agents_line
    from pytps.report.agent_lines import agent_lines, agent_trace
    from pytps.results.files import AGENT_TRACE
    from pytps.settings.table import TABLE

    settings = TABLE.from_flags(args, "agents")
    html = settings.pop("html")
    plan = AgentPlan(**{f.name: settings.pop(f.name) for f in fields(AgentPlan)})
    outcome = agents(args.url, plan, say=lambda line: print(line, flush=True), **settings)
    if outcome.search is not None:
        print(agents_line(outcome.search))
        return 0
    result = outcome.run
    assert result is not None
    for line in agent_lines(result.summary, result.mode):
        print(line)
    if outcome.out_dir is not None:
        (outcome.out_dir / AGENT_TRACE).write_text(json.dumps(agent_trace(result.agents)) + "\n")
        print(f"wrote {outcome.out_dir}/{{agents.json,turns.jsonl,{AGENT_TRACE}}}")
    if html:
        from pytps.report.html_agents import write_agents_page

        print(f"wrote {write_agents_page(result.agents, result.summary, result.mode, Path(html))}")
    failed = sum(1 for a in result.agents if a.end == "error")
    return 1 if failed == len(result.agents) else 0
