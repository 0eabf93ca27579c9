"""The agent driver against the emulator and its truth (issue 35's figures): replay of generated
trajectories with the prefix cache, live tool loops with parallel calls, planted invalid
arguments and graded answers, and the same file on chat, Responses and Anthropic."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import pytps
from pytps.measure.agents import AgentSlo
from pytps.runner.agents import AgentSettings, run_agents
from pytps.workload.agent_sources import SyntheticAgents
from pytps.workload.agent_tools import ToolSpec, task_set
from pytps.workload.sessions import ThinkTime

MS = 1_000_000
TRAJS = SyntheticAgents(count=16, turns_min=20, turns_max=60, context=32000, tool_s=0.01, seed=3).trajectories()
SEARCH = ToolSpec(
    "search",
    {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}}, "required": ["query"]},
    ThinkTime("fixed", 0.1),
    30,
)


def _replay(api: str = "openai-chat", trajs=TRAJS, **emu_kw):
    kw = dict(ttft_ms=5.0, itl_us=200.0, prefix_cache_tokens=2_000_000, prefill_us_per_token=0.5)
    kw.update(emu_kw)
    with pytps.Emulator(**kw) as emu:
        run = asyncio.run(run_agents(AgentSettings(emu.base_url, api=api, agents=8, slo=AgentSlo(ttft_s=2.0)), trajs))
        truth = {t["id"]: t for t in emu.wait_truth(len(run.turn_rows()))}
    return run, truth


def test_replay_matches_the_truth_turn_by_turn():
    run, truth = _replay()
    rows = run.turn_rows()
    assert len(rows) == sum(len(t.turns) for t in TRAJS) and all(r.ok for r in rows)
    assert run.summary["agents_finished"] == 16
    for r in rows:
        t = truth[r.response_id]
        # Per-turn cached tokens (the server's usage) equal the truth's; the prefix cache carries
        # the context forward, so every turn but the first is mostly cached.
        assert r.cached_tokens == t["cached_tokens"] and r.input_tokens == t["prompt_tokens"]
        assert r.output_tokens == t["output_tokens"]
    later = [r.cached_share for r in rows if r.turn > 0]
    assert min(later) > 0.5
    # The trajectory's own turn count and output lengths were asked for and served.
    by_traj = {t.id: t for t in TRAJS}
    for a in run.agents:
        t = by_traj[a.trajectory]
        assert [r.output_tokens for r in a.turns] == [turn.output_tokens for turn in t.turns]
        # Time through = model time + tool time + the client's own work between turns.
        assert a.time_s == pytest.approx(a.model_s + a.tool_s + a.overhead_s)
        assert a.tool_s >= sum(turn.tool_s for turn in t.turns[:-1]) - 1e-6
    assert run.summary["slo_turn_share"] == 1.0


@pytest.mark.timing
def test_replay_ttft_and_time_through_are_exact():
    run, truth = _replay()
    err = []
    for r in run.turn_rows():
        t = truth[r.response_id]
        err.append(r.ttft_s * 1e9 - (t["sent_ns"][0] - t["received_ns"]))
    # The client's TTFT against the emulator's: send-to-receive and write-to-read, each < 0.5 ms.
    assert 0 <= np.median(err) < 1 * MS, err
    for a in run.agents:
        assert a.overhead_s <= 1e-3 * len(a.turns), (a.trajectory, a.overhead_s)


def test_the_same_file_replays_on_every_api():
    trajs = SyntheticAgents(count=3, turns_min=4, turns_max=6, context=6000, first=800, tool_s=0.0, seed=5).trajectories()
    outs, ins = {}, {}
    for api in ("openai-chat", "openai-responses", "anthropic"):
        run, truth = _replay(api, trajs)
        rows = sorted(run.turn_rows(), key=lambda r: (r.trajectory, r.turn))
        assert all(r.ok for r in rows)
        outs[api] = [r.output_tokens for r in rows]
        ins[api] = [truth[r.response_id]["prompt_tokens"] for r in rows]
    assert outs["openai-chat"] == outs["openai-responses"] == outs["anthropic"]
    # Input tokens: the same contents; each API's own field names and ids differ by a few tokens.
    for a, b in zip(ins["openai-chat"], ins["anthropic"]):
        assert abs(a - b) <= 0.02 * a + 16
    for a, b in zip(ins["openai-chat"], ins["openai-responses"]):
        assert abs(a - b) <= 0.02 * a + 16


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic"])
def test_live_loop_against_the_truth(api):
    tasks = task_set("tasks:arithmetic:6", [SEARCH])
    emu_kw = dict(ttft_ms=2.0, itl_us=100.0, agent_turns=3, agent_calls=4, agent_invalid=0.3,
                  answers="tasks:arithmetic:6", answer_accuracy=0.5, seed=2)
    with pytps.Emulator(**emu_kw) as emu:
        run = asyncio.run(run_agents(AgentSettings(emu.base_url, api=api, agents=3), tasks))
        truth = emu.wait_truth(len(run.turn_rows()))
    by_id = {t["id"]: t for t in truth}
    s = run.summary
    # Every tool result reached the emulator with its call id, on the next turn.
    for a in run.agents:
        for prev, nxt in zip(a.turns, a.turns[1:]):
            sent = [c["id"] for c in by_id[prev.response_id]["tool_calls"]]
            assert [r["id"] for r in by_id[nxt.response_id]["tool_results"]] == sent
    # Planted invalid arguments are counted exactly.
    planted = sum(1 for t in truth for c in t["tool_calls"] if not c["valid"])
    assert s["tool_calls"] == sum(len(t["tool_calls"]) for t in truth) == 6 * 3 * 4
    assert s["invalid_tool_calls"] == planted and planted > 0
    # Graded final answers: success equals the truth's right answers.
    for a in run.agents:
        assert a.end == "answer" and len(a.turns) == 4
        assert a.success == (by_id[a.turns[-1].response_id]["answer"] == "right")
    assert s["tasks_graded"] == 6 and s["steps_per_task"]["mean"] == 4
    # 4 parallel calls of 100 ms take 100 ms of tool time, not 400.
    waits = [t.tool_s for a in run.agents for t in a.turns if t.calls]
    assert min(waits) >= 0.1 and np.median(waits) < 0.2


@pytest.mark.timing
def test_parallel_calls_overlap_exactly():
    tasks = task_set("prompts:4", [SEARCH])
    with pytps.Emulator(ttft_ms=1.0, itl_us=50.0, agent_turns=2, agent_calls=4) as emu:
        run = asyncio.run(run_agents(AgentSettings(emu.base_url, agents=1), tasks))
    waits = [t.tool_s for a in run.agents for t in a.turns if t.calls]
    assert len(waits) == 8 and all(0.1 <= w <= 0.105 for w in waits), waits


def test_step_cap_and_arrival_rate():
    tasks = task_set("prompts:3", [SEARCH])
    with pytps.Emulator(ttft_ms=1.0, itl_us=50.0, agent_turns=5) as emu:
        run = asyncio.run(run_agents(AgentSettings(emu.base_url, rate=50.0, step_cap=2), tasks))
    assert [a.end for a in run.agents] == ["step_cap"] * 3 and all(len(a.turns) == 2 for a in run.agents)
    assert run.summary["agents_finished"] == 0
