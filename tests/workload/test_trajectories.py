"""Agent trajectories: the JSONL form, the seeded generator and the shipped set, the importers,
and each API's shape of a turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytps.errors import ConfigError
from pytps.workload.agent_requests import agent_request
from pytps.workload.agent_sources import (
    SHIPPED_SPEC,
    SyntheticAgents,
    agent_trajectories,
    import_trajectories,
    shipped_trajectories,
)
from pytps.workload.datasets import estimate_tokens
from pytps.workload.trajectories import load_trajectories, trajectory_json, write_trajectories


def _context_tokens(t, k):
    return sum(estimate_tokens(m.content) for m in t.context(k) if m.content)


def test_synthetic_shape_and_seed():
    s = SyntheticAgents.parse("synthetic:turns=20-60,context=32000,count=16,seed=3")
    trajs = s.trajectories()
    assert len(trajs) == 16
    assert all(20 <= len(t.turns) <= 60 for t in trajs)
    last = [_context_tokens(t, len(t.turns) - 1) for t in trajs]
    # The context grows to about `context` tokens at the last turn.
    assert 0.6 * 32000 < sum(last) / len(last) < 1.25 * 32000, last
    assert all(_context_tokens(t, 1) < _context_tokens(t, len(t.turns) - 1) for t in trajs)
    outs = sorted(turn.output_tokens for t in trajs for turn in t.turns)
    assert 100 < outs[len(outs) // 2] < 220  # median around 150
    waits = sorted(turn.tool_s for t in trajs for turn in t.turns[:-1])
    assert 0.6 < waits[len(waits) // 2] < 1.5  # median around 1 s
    assert [trajectory_json(t) for t in s.trajectories()] == [trajectory_json(t) for t in trajs]
    assert trajectory_json(SyntheticAgents.parse("synthetic:seed=4").one(0)) != trajectory_json(trajs[0])
    # Every turn after the first answers the previous reply's calls, by id.
    for t in trajs:
        for prev, turn in zip(t.turns, t.turns[1:]):
            assert prev.reply is not None
            assert [m.tool_call_id for m in turn.messages] == [c.id for c in prev.reply.tool_calls]


@pytest.mark.parametrize(
    "spec, word",
    [("synthetic:turns=9-3", "range"), ("synthetic:size=3", "unknown key"), ("synthetic:count", "key=value"),
     ("synthetic:context=10,first=20", "first <= context")],
)
def test_synthetic_spec_errors(spec, word):
    with pytest.raises(ConfigError, match=word):
        SyntheticAgents.parse(spec)


def test_jsonl_round_trip_keeps_fillers_small(tmp_path):
    trajs = SyntheticAgents(count=3, turns_min=5, turns_max=8, context=8000, seed=1).trajectories()
    path = tmp_path / "t.jsonl"
    write_trajectories(path, trajs)
    assert path.stat().st_size < 20_000  # fillers are written as {"tokens": N}
    again = load_trajectories(path)
    assert [trajectory_json(t) for t in again] == [trajectory_json(t) for t in trajs]
    assert [len(t.context(len(t.turns) - 1)) for t in again] == [len(t.context(len(t.turns) - 1)) for t in trajs]


def test_shipped_set_is_the_documented_generator_run():
    shipped = shipped_trajectories()
    assert len(shipped) == 12 and all(10 <= len(t.turns) <= 30 for t in shipped)
    assert [trajectory_json(t) for t in shipped] == [trajectory_json(t) for t in SHIPPED_SPEC.trajectories()]
    assert agent_trajectories("example")[0].id == shipped[0].id


@pytest.mark.parametrize(
    "line, word",
    [('{"turns": []}', "non-empty"), ('{"turns": [{"output_tokens": 0}]}', "output_tokens"),
     ('{"turns": [{"output_tokens": 5, "tool_s": -1}]}', "tool_s"),
     ('{"turns": [{"output_tokens": 5, "messages": [{"role": "robot"}]}]}', "role"),
     ('{"turns": [{"output_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}]}', "tool_call_id"),
     ('{"turns": [{"output_tokens": 5, "messages": [{"role": "user", "content": {"tokens": 0}}]}]}', "tokens"),
     ("not json", "not JSON")],
)
def test_bad_trajectories_say_where(tmp_path, line, word):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=word) as e:
        load_trajectories(path)
    assert "line 1" in str(e.value)


OPENAI = {
    "id": "conv1",
    "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
    "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
        {"role": "assistant", "content": "There are two files: a.py and b.py."},
    ],
}


def test_import_openai_messages(tmp_path):
    path = tmp_path / "conv.jsonl"
    path.write_text(json.dumps(OPENAI) + "\n")
    [t] = import_trajectories(path, tool_s=0.5)
    assert t.id == "conv1" and len(t.turns) == 2 and t.tools[0]["name"] == "ls"
    assert [m.role for m in t.turns[0].messages] == ["system", "user"]
    assert t.turns[0].reply is not None and t.turns[0].reply.tool_calls[0].id == "c1"
    assert t.turns[0].tool_s == 0.5 and t.turns[1].tool_s == 0.0
    assert t.turns[1].output_tokens == estimate_tokens("There are two files: a.py and b.py.")
    assert [m.role for m in t.context(1)] == ["system", "user", "assistant", "tool"]


def test_import_sharegpt_and_swe_agent(tmp_path):
    share = {"conversations": [
        {"from": "system", "value": "agent"}, {"from": "human", "value": "weather in Paris?"},
        {"from": "function_call", "value": json.dumps({"name": "weather", "arguments": {"city": "Paris"}})},
        {"from": "observation", "value": "12 C"}, {"from": "gpt", "value": "It is 12 C."}]}
    p = tmp_path / "share.json"
    p.write_text(json.dumps(share))
    [t] = import_trajectories(p)
    assert len(t.turns) == 2 and t.turns[0].reply.tool_calls[0].name == "weather"
    assert json.loads(t.turns[0].reply.tool_calls[0].arguments) == {"city": "Paris"}
    assert t.turns[1].messages[0].tool_call_id == t.turns[0].reply.tool_calls[0].id

    traj = {"history": [
        {"role": "system", "content": "SWE-agent"}, {"role": "user", "content": "Fix issue 1"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [{"id": "t1", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "content": "setup.py", "tool_call_ids": ["t1"]},
        {"role": "assistant", "content": "submit"}],
        "trajectory": [{"action": "ls", "execution_time": 0.25}, {"action": "submit", "execution_time": 0.0}]}
    p = tmp_path / "x.traj"
    p.write_text(json.dumps(traj))
    [t] = import_trajectories(p)
    assert len(t.turns) == 2 and t.turns[0].tool_s == 0.25
    assert t.turns[1].messages[0].tool_call_id == "t1"


def test_each_api_shape_of_a_turn():
    [t] = SyntheticAgents(count=1, turns_min=3, turns_max=3, context=3000, first=500, seed=2).trajectories()
    ctx = t.context(2)
    path, chat = agent_request("openai-chat", "m", ctx, t.tools, 10)
    assert path == "/v1/chat/completions" and chat["stream_options"] == {"include_usage": True}
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert chat["messages"][2]["tool_calls"][0]["function"]["name"] in ("bash", "read_file")
    assert chat["tools"][0]["type"] == "function"
    path, resp = agent_request("openai-responses", "m", ctx, t.tools, 10)
    types = [i.get("type", "message") for i in resp["input"]]
    assert types == ["message", "message", "function_call", "function_call_output", "message", "function_call",
                     "function_call_output"]
    assert resp["instructions"] and resp["max_output_tokens"] == 10
    path, anth = agent_request("anthropic", "m", ctx, t.tools, 10)
    assert [m["role"] for m in anth["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert anth["messages"][1]["content"][-1]["type"] == "tool_use"
    assert anth["messages"][2]["content"][0]["type"] == "tool_result"
    assert anth["system"] and "input_schema" in anth["tools"][0]
    with pytest.raises(ConfigError, match="agents speak"):
        agent_request("ollama", "m", ctx, t.tools, 10)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        agent_trajectories(str(Path(tmp_path) / "nope.jsonl"))
