"""`pytps agents`: replay agent trajectories, or run live tool loops, with N concurrent agents
(or agents arriving at a rate), and report per-turn and per-agent figures (docs/agents.md)."""

from __future__ import annotations

import argparse
from typing import Any

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

_RESULTS_FILES = ("agents.json", "turns.jsonl", "agents_trace.json")  # the --out folder's files


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
    p.add_argument("--tool-time", default=None, metavar="DIST", help="replay's tool waits: S, S:SD, LO-HI or exp:MEAN")
    p.add_argument("--slo", default=None, metavar="TIER", help="per-turn tier: ttft=SECONDS,tps=TOKENS_PER_S")
    p.add_argument("--api", default="openai-chat", choices=("openai-chat", "openai-responses", "anthropic"))
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


def _search(args: argparse.Namespace, settings: Any, work: list[Any]) -> int:
    """The largest N agents whose turns meet --slo-run, by pytps.sweep.search's CapacitySearch on
    the concurrency axis: each probe replays (or loops) max(len(work), 2N) agents, N at once."""
    import asyncio
    import dataclasses
    import json

    from pytps.errors import ConfigError
    from pytps.measure.slo import parse_slo_run
    from pytps.runner.agents import run_agents
    from pytps.sweep.search import CapacitySearch, ProbeRun, capacity_line

    if not args.slo_run:
        raise ConfigError("--search needs targets: --slo-run ttft:p90=SECONDS (and/or e2e:p99=...)")
    slo_run = parse_slo_run(args.slo_run)

    def run_probe(mode: str, load: float, name: str) -> ProbeRun:
        n = max(1, int(load))
        items = [work[i % len(work)] for i in range(max(len(work), 2 * n))]
        result = asyncio.run(run_agents(dataclasses.replace(settings, agents=n, rate=None), items))
        turns = result.turn_rows()
        ok = [t for t in turns if t.ok]
        span = (max(t.t_end_ns or t.t_send_ns for t in turns) - min(t.t_send_ns for t in turns)) / 1e9
        return ProbeRun(
            values={
                "ttft_s": [t.ttft_s for t in ok if t.ttft_s is not None],
                "e2e_s": [t.e2e_s for t in ok if t.e2e_s],
            },
            ok=[t.ok for t in turns],
            saturation=None,
            completion_rps=len(ok) / span if span > 0 else None,
            dir=name.replace("concurrency", "agents"),
        )

    search = CapacitySearch(
        axis="concurrency",
        run_probe=run_probe,
        slo_run=slo_run,
        max_probes=args.search_max_probes,
        start=float(args.search_start) if args.search_start else None,
        progress=lambda line: print(line.replace("concurrency", "agents"), flush=True),
    )
    result = search.run()
    print(capacity_line(result).replace("concurrent requests", "concurrent agents"))
    result["axis"] = "agents"
    if args.out:
        from pathlib import Path

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "agents_search.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


def _record(args: argparse.Namespace, doc: dict[str, Any], summary: dict[str, Any], out: Any) -> None:
    """The run in the results store (kind "agents"), its fingerprint made of what ran: the agent
    workload, the load (agents or rate, tool time, step cap) and the API."""
    from datetime import datetime, timezone
    from urllib.parse import urlsplit

    from pytps.runner.store_entry import record_in_store

    url = urlsplit(args.url)
    metadata = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endpoint": {"scheme": url.scheme, "host": url.hostname, "port": url.port, "path": url.path},
        "model": args.model,
        "api": args.api,
        "transport": args.transport,
        "workload": {"kind": "agents", "agents": doc["workload"], "mode": doc["mode"]},
        "load": {"concurrency": doc["fingerprint"]["agents"], "rate": args.agent_rate},
        "slo": {"per_request_s": args.slo},
    }
    figures = {
        k: float(v)
        for k, v in {
            "agent_ttft_p50_s": summary["ttft_s"].get("p50"),
            "agent_ttft_p90_s": summary["ttft_s"].get("p90"),
            "agent_time_mean_s": summary["agent_time_s"].get("mean"),
            "agent_output_tps_mean": summary["agent_output_tps"].get("mean"),
            "agent_cached_share_mean": summary["cached_share"].get("mean"),
            "agent_slo_turn_share": summary.get("slo_turn_share"),
            "agent_task_success": summary.get("task_success"),
            "agent_tool_call_validity": summary.get("tool_call_validity"),
        }.items()
        if v is not None
    }
    record_in_store(args.store, {"metadata": metadata, "summary": summary}, out, kind="agents", figures=figures)


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
    import asyncio
    import json
    import os
    from pathlib import Path

    from pytps.errors import ConfigError
    from pytps.measure.agents import AgentSlo
    from pytps.report.agent_lines import agent_lines, agent_trace
    from pytps.runner.agents import AgentSettings, run_agents
    from pytps.workload.agent_sources import agent_trajectories
    from pytps.workload.agent_tools import DEFAULT_TOOLS, load_tools, task_set
    from pytps.workload.sessions import ThinkTime

    count, work_spec = _split_agents(args.agents)
    tool_time = ThinkTime.parse(args.tool_time) if args.tool_time is not None else None
    work: list[Any]
    if args.live:
        if work_spec is not None:
            raise ConfigError("--live runs tasks, not trajectories: leave the --agents workload out")
        tools = load_tools(args.tools) if args.tools else list(DEFAULT_TOOLS)
        work = list(task_set(args.live, tools))
    else:
        work = list(agent_trajectories(work_spec or "example", tool_time.a if tool_time else 0.0))
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    settings = AgentSettings(
        args.url.rstrip("/"),
        api=args.api,
        model=args.model,
        agents=count,
        rate=args.agent_rate,
        stream=args.stream,
        tool_time=tool_time,
        step_cap=args.step_cap,
        max_tokens=args.max_tokens,
        api_key=key,
        seed=args.seed,
        slo=AgentSlo.parse(args.slo),
        transport=args.transport,
    )
    if args.search:
        return _search(args, settings, work)
    result = asyncio.run(run_agents(settings, work))
    for line in agent_lines(result.summary, result.mode):
        print(line)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "mode": result.mode,
            "workload": args.live or work_spec or "example",
            "fingerprint": {
                "kind": "agents",
                "api": args.api,
                "model": args.model,
                "agents": count,
                "rate": args.agent_rate,
                "workload": args.live or work_spec or "example",
            },
            "summary": result.summary,
            "agents": [a.as_dict() for a in result.agents],
        }
        (out / _RESULTS_FILES[0]).write_text(json.dumps(doc, indent=1) + "\n")
        with open(out / _RESULTS_FILES[1], "w", encoding="utf-8") as f:
            for t in result.turn_rows():
                f.write(json.dumps(t.as_dict()) + "\n")
        (out / _RESULTS_FILES[2]).write_text(json.dumps(agent_trace(result.agents)) + "\n")
        print(f"wrote {out}/{{{','.join(_RESULTS_FILES)}}}")
        if not args.no_store:
            _record(args, doc, result.summary, out)
    if args.html:
        from pytps.report.html_agents import write_agents_page

        print(f"wrote {write_agents_page(result.agents, result.summary, result.mode, args.html)}")
    failed = sum(1 for a in result.agents if a.end == "error")
    return 1 if failed == len(result.agents) else 0
