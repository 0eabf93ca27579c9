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
    # ---- agents (issue 35): to port into the settings table ----
    p.add_argument(
        "--agents",
        action="append",
        default=[],
        metavar="N|WORK",
        help="concurrent agents (an integer, default 8) and/or their trajectories: synthetic:KEY=VALUE,..., "
        "example (the shipped set) or a file (pytps JSONL, OpenAI messages, SWE-agent .traj, ShareGPT); "
        "give it twice for both",
    )
    p.add_argument("--agent-rate", type=float, default=None, metavar="R", help="agents arriving per second instead")
    p.add_argument(
        "--live",
        default=None,
        metavar="TASKS",
        help="run live tool loops on tasks:NAMES:COUNT[:SEED] (graded) or prompts:COUNT instead of replaying",
    )
    p.add_argument("--tools", default=None, metavar="FILE", help="the mocked tools of --live (JSON list of tool specs)")
    p.add_argument("--step-cap", type=int, default=20, help="a live loop's most turns per task (default 20)")
    p.add_argument(
        "--tool-choice",
        default=None,
        choices=("auto", "required", "none"),
        help="the tool choice asked of the model (default: the server's; required: a call every turn)",
    )
    p.add_argument(
        "--no-parallel-tool-calls",
        dest="parallel_tool_calls",
        action="store_const",
        const=False,
        default=None,
        help="ask for at most one tool call a turn",
    )
    p.add_argument("--tool-time", default=None, metavar="DIST", help="replay's tool waits: S, S:SD, LO-HI or exp:MEAN")
    p.add_argument("--slo", default=None, metavar="TIER", help="per-turn tier: ttft=SECONDS,tps=TOKENS_PER_S")
    p.add_argument("--api", default="openai-chat", choices=("openai-chat", "openai-responses", "anthropic"))
    p.add_argument(
        "--previous-response-id",
        action="store_true",
        help="--api openai-responses replay: later turns send previous_response_id and only their new items",
    )
    p.add_argument("--model", default="pytps-emulator", help="the model name sent (default pytps-emulator)")
    p.add_argument("--max-tokens", type=int, default=256, help="a live turn's output limit (default 256)")
    p.add_argument("--no-stream", dest="stream", action="store_false", help="ask for whole bodies")
    p.add_argument("--transport", default="native", choices=("native", "asyncio", "httpx"))
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable holding the API key")
    p.add_argument("--seed", type=int, default=0, help="seed of tool times, tool latencies and arrivals")
    p.add_argument("--out", default=None, metavar="DIR", help="write agents.json, turns.jsonl, agents_trace.json here")
    p.add_argument("--store", metavar="PATH|URL", help="the results store to record the run in (with --out)")
    p.add_argument("--no-store", action="store_true", help="do not record the run in the results store")
    p.add_argument("--html", default=None, metavar="FILE", help="write an HTML page: TTFT per turn, agents' timelines")
    p.add_argument(
        "--search",
        action="store_true",
        help="find the most concurrent agents whose turns meet --slo-run (the capacity search's rules)",
    )
    p.add_argument(
        "--slo-run", default=None, metavar="TARGETS", help="the search's targets over all turns: ttft:p90=0.5,..."
    )
    p.add_argument("--search-max-probes", type=int, default=8, help="the search's most probe runs (default 8)")
    p.add_argument("--search-start", type=int, default=None, metavar="N", help="the search's first probe (default 1)")
    p.set_defaults(func=run)


def _split_agents(values: list[str]) -> tuple[int, str | None]:
    from pytps.errors import ConfigError

    count, work = 8, None
    for v in values:
        if v.isdigit():
            count = int(v)
        elif work is None:
            work = v
        else:
            raise ConfigError(f"--agents names two workloads ({work!r} and {v!r}); give one")
    return count, work


def run(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from pytps.app.agents import AgentPlan, agents, agents_line
    from pytps.report.agent_lines import agent_lines, agent_trace
    from pytps.results.files import AGENT_TRACE

    count, work_spec = _split_agents(args.agents)
    plan = AgentPlan(
        trajectories=work_spec,
        live=args.live,
        tools=args.tools,
        tool_time=args.tool_time,
        slo=args.slo,
        search=args.search,
        slo_run=args.slo_run,
        search_max_probes=args.search_max_probes,
        search_start=args.search_start,
        out=args.out,
        store=args.store,
        record=not args.no_store,
    )
    outcome = agents(
        args.url,
        plan,
        say=lambda line: print(line, flush=True),
        api=args.api,
        model=args.model,
        agents=count,
        rate=args.agent_rate,
        stream=args.stream,
        step_cap=args.step_cap,
        max_tokens=args.max_tokens,
        api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
        seed=args.seed,
        transport=args.transport,
        previous_response_id=args.previous_response_id,
        tool_choice=args.tool_choice,
        parallel_tool_calls=args.parallel_tool_calls,
    )
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
    if args.html:
        from pytps.report.html_agents import write_agents_page

        print(f"wrote {write_agents_page(result.agents, result.summary, result.mode, Path(args.html))}")
    failed = sum(1 for a in result.agents if a.end == "error")
    return 1 if failed == len(result.agents) else 0
