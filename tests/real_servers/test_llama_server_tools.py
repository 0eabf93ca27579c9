"""A live tool loop against a real llama-server (issue 35, docs/agents.md "Live tool loops";
docs/real-servers.md, "The live tool loop"): `pytps agents --live` with `tool_choice: "required"`
on the tool-calling variant of the tiny random model (tiny_model.py, ``tool_markers``) and
pytps's own Hermes-style template (tool_calls.jinja). llama.cpp's grammar writes every
character of each call the random model cannot; the model's output layer puts the call marker
first and the end of generation right after the call. Every call is parsed on every transport,
and the server's prompt cache carries each task's context forward: each later turn's
`cache_n` (usage.prompt_tokens_details.cached_tokens) is at least the previous turn's prompt.
Tier `real_server` (.ci/steps/45-llama-server.sh)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytps.app.agents import AgentPlan, agents
from pytps.transport import TRANSPORT_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_llama_server import build
from conftest import serve
from tiny_model import make_model

pytestmark = pytest.mark.real_server

TRANSPORTS = [t for t in TRANSPORT_NAMES if t != "auto"]
# One task per agent and slot (-np AGENTS): llama-server gives a request the idle slot whose cached
# prompt shares the longest prefix with it, so a task's next turn finds its own slot. A task started
# while another waits between turns could take that one's slot instead: every new task shares the
# tools' prefix (161 tokens) equally with each idle slot, takes the first, and overwrites the rest of
# its context (CI saw it once with 20 tasks on 4 agents: a turn reused 161 tokens of its previous
# 199-token prompt). With as many tasks as agents no task starts mid-way, and each transport's run
# finds its tasks' slots by their whole first prompt. More steps keep the turns checked per run.
TASKS, STEPS, AGENTS = 4, 5, 4
TEMPLATE = Path(__file__).resolve().parent / "tool_calls.jinja"
# One tool whose argument is an enum: the grammar then spells the whole call (a free string would
# let the model's favourite token, the call marker, fill it up to max_tokens).
QUERY = {"type": "string", "enum": ["alpha", "beta", "gamma"]}
TOOLS = [{"name": "search", "description": "Search the notes.", "latency_s": "0.01", "result_tokens": 40,
          "parameters": {"type": "object", "properties": {"query": QUERY}, "required": ["query"],
                         "additionalProperties": False}}]  # fmt: skip


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server with --jinja and the tool template, one slot per agent (-np), so that each
    agent's turns find their own slot's cache."""
    binary, vocab = build()
    work = tmp_path_factory.mktemp("llama-tools")
    model = make_model(vocab, work / "tiny-tools.gguf", tool_markers=True)
    yield from serve(binary, model, work, "--jinja", "--chat-template-file", str(TEMPLATE), "-np", str(AGENTS))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_live_tool_loop_every_call_parsed_and_the_cache_carries_the_context(
    tool_server: str, transport: str, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    plan = AgentPlan(live=f"prompts:{TASKS}", tools=str(tools), out=str(tmp_path / "agents"), record=False)
    t0 = time.monotonic()
    outcome = agents(
        tool_server, plan, api="openai-chat", model="tiny", agents=AGENTS, step_cap=STEPS, max_tokens=64,
        transport=transport, tool_choice="required", parallel_tool_calls=False,
    )  # fmt: skip
    run = outcome.run
    assert run is not None and run.mode == "live"
    rows = run.agents
    turns = [t for a in rows for t in a.turns]
    calls = sum(t.calls for t in turns)
    print(f"\n[{transport}] {len(rows)} tasks, {len(turns)} turns, {calls} calls, "
          f"{sum(t.invalid_calls for t in turns)} invalid, {time.monotonic() - t0:.1f} s")  # fmt: skip
    # 0 lost: every task ran its STEPS steps, each turn answered.
    assert len(rows) == TASKS
    assert all(t.ok for t in turns), [t.error for t in turns if not t.ok]
    assert all(a.end == "step_cap" and len(a.turns) == STEPS for a in rows), [(a.trajectory, a.end) for a in rows]
    # Every call parsed: one call a turn (tool_choice required, parallel calls off), each valid
    # against its schema.
    assert all(t.calls == 1 and t.invalid_calls == 0 for t in turns), [(t.calls, t.invalid_calls) for t in turns]
    # The KV cache carries the context: each later turn reused at least the previous prompt.
    for a in rows:
        for prev, turn in zip(a.turns, a.turns[1:], strict=False):
            assert prev.input_tokens and turn.input_tokens and turn.cached_tokens is not None
            assert turn.input_tokens > prev.input_tokens
            why = (a.trajectory, turn.turn, turn.cached_tokens, prev.input_tokens)
            assert turn.cached_tokens >= prev.input_tokens, why
