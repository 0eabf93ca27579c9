"""Responses replay with `previous_response_id` (issue 35): later turns send only their new items,
and the emulator, keeping each response's conversation by id, serves the whole context: each
turn's input is the previous turn's input, its output and the new items, and the prefix cache
carries it forward. An id the server does not hold (unknown, or `store: false`) is its 400."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest

import pytps
from pytps.errors import ConfigError
from pytps.runner.agents import AgentSettings, run_agents
from pytps.workload.agent_requests import agent_request
from pytps.workload.agent_sources import SyntheticAgents

TRAJS = SyntheticAgents(count=3, turns_min=4, turns_max=6, context=6000, tool_s=0.001, seed=5).trajectories()
BLOCK = 16  # the emulator's prefix-cache block (prefix_cache_block_tokens)


def test_later_turns_send_only_new_items_and_the_server_holds_the_rest():
    with pytps.Emulator(ttft_ms=2.0, itl_us=100.0, prefix_cache_tokens=1_000_000) as emu:
        s = AgentSettings(emu.base_url, api="openai-responses", agents=1, previous_response_id=True)
        run = asyncio.run(run_agents(s, TRAJS))
    rows = run.turn_rows()
    assert len(rows) == sum(len(t.turns) for t in TRAJS) and all(r.ok for r in rows)
    by_traj: dict[str, list] = {}
    for r in rows:
        by_traj.setdefault(r.trajectory, []).append(r)
    for t in TRAJS:
        turns = sorted(by_traj[t.id], key=lambda r: r.turn)
        for prev, cur in itertools.pairwise(turns):
            # The server's conversation: the previous input and output, then the new items.
            assert cur.input_tokens > prev.input_tokens + prev.output_tokens
            # The previous turn's whole prompt is a prefix of this one: its full blocks are cached.
            assert cur.cached_tokens == prev.input_tokens // BLOCK * BLOCK


def test_a_later_turns_body_holds_only_its_new_items():
    t = TRAJS[0]
    _, full = agent_request("openai-responses", "m", t.context(2), t.tools, 50)
    system = [m for m in t.context(0) if m.role == "system"]
    _, short = agent_request("openai-responses", "m", system + list(t.turns[2].messages), t.tools, 50,
                             previous_response_id="resp_7")  # fmt: skip
    assert short["previous_response_id"] == "resp_7" and "previous_response_id" not in full
    assert short.get("instructions") == full.get("instructions")  # not carried over by the server: sent again
    assert len(short["input"]) == len(t.turns[2].messages) < len(full["input"])
    assert short["input"] == full["input"][-len(short["input"]) :]


def test_an_id_the_server_does_not_hold_is_its_400():
    with pytps.Emulator(ttft_ms=1.0, itl_us=10.0) as emu:
        url = emu.base_url + "/v1/responses"
        r = httpx.post(url, json={"model": "m", "input": "hi", "previous_response_id": "resp_nope"})
        assert r.status_code == 400 and "Previous response with id 'resp_nope' not found." in r.text
        kept = httpx.post(url, json={"model": "m", "input": "hi", "max_output_tokens": 3}).json()
        gone = httpx.post(url, json={"model": "m", "input": "hi", "max_output_tokens": 3, "store": False}).json()
        ok = httpx.post(url, json={"model": "m", "input": "more", "previous_response_id": kept["id"],
                                   "max_output_tokens": 3})  # fmt: skip
        assert ok.status_code == 200 and ok.json()["previous_response_id"] == kept["id"]
        # "hi" (1 token) + its 3 output tokens + "more" (1 token)
        assert ok.json()["usage"]["input_tokens"] == 5
        r = httpx.post(url, json={"model": "m", "input": "x", "previous_response_id": gone["id"]})
        assert r.status_code == 400


def test_only_responses_has_previous_response_id():
    with pytest.raises(ConfigError, match="openai-responses"):
        AgentSettings("http://127.0.0.1:9", api="openai-chat", previous_response_id=True)
