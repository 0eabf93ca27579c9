"""The emulator's reading of an agent conversation (csrc/emulator/agent.cpp) against a reference
written here from the rules in docs/emulator.md ("Agents"), on generated conversations of every
API: the turn and the tool results by call id agree, for any mix of roles, blocks, unicode text
and escapes, and the planned calls are JSON that streams back whole."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytps

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
IDS = st.text(alphabet="abc_12\"\\é", min_size=1, max_size=6)
CALLS = st.lists(IDS, min_size=0, max_size=3)


@st.composite
def conversation(draw):
    """A list of (kind, payload): ("user", text), ("assistant", [call ids]), ("tool", id, text)."""
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "tool"]))
        if kind == "user":
            steps.append(("user", draw(TEXT)))
        elif kind == "assistant":
            steps.append(("assistant", draw(CALLS), draw(TEXT)))
        else:
            steps.append(("tool", draw(IDS), draw(TEXT)))
    return steps


def reference(steps, api):
    """(turn, [result ids]) by the documented rules."""
    turn, results, in_run = 0, [], False
    for step in steps:
        if api == "openai-responses" and step[0] == "assistant" and step[2]:
            in_run = False  # its text is a message item, sent before its calls
        if step[0] == "assistant" and step[1]:
            if api != "openai-responses" or not in_run:
                turn += 1
                results = []
            in_run = True
        elif step[0] == "tool":
            results.append(step[1])
            in_run = False
        else:
            # Responses: an assistant message with text is a message item; with no text and no
            # calls nothing is sent. Either way a message ends a run of calls.
            if api != "openai-responses" or step[0] == "user" or step[2]:
                in_run = False
    return turn, results


def body(steps, api):
    if api == "openai-chat":
        msgs = []
        for s in steps:
            if s[0] == "user":
                msgs.append({"role": "user", "content": s[1]})
            elif s[0] == "assistant":
                m = {"role": "assistant", "content": s[2]}
                if s[1]:
                    m["tool_calls"] = [{"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in s[1]]
                msgs.append(m)
            else:
                msgs.append({"role": "tool", "tool_call_id": s[1], "content": s[2]})
        return "/v1/chat/completions", {"messages": msgs, "tools": [{"type": "function", "function": {"name": "f"}}]}
    if api == "openai-responses":
        items = []
        for s in steps:
            if s[0] == "user":
                items.append({"role": "user", "content": s[1]})
            elif s[0] == "assistant":
                if s[2]:
                    items.append({"role": "assistant", "content": s[2]})
                items += [{"type": "function_call", "call_id": c, "name": "f", "arguments": "{}"} for c in s[1]]
            else:
                items.append({"type": "function_call_output", "call_id": s[1], "output": s[2]})
        return "/v1/responses", {"input": items, "tools": [{"type": "function", "name": "f"}]}
    msgs = []
    for s in steps:  # Anthropic: tool results are blocks of a user message
        if s[0] == "user":
            msgs.append({"role": "user", "content": s[1]})
        elif s[0] == "assistant":
            blocks = [{"type": "text", "text": s[2]}] + [{"type": "tool_use", "id": c, "name": "f", "input": {}} for c in s[1]]
            msgs.append({"role": "assistant", "content": blocks})
        else:
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": s[1], "content": s[2]}]})
    return "/v1/messages", {"messages": msgs, "max_tokens": 8, "tools": [{"name": "f", "input_schema": {"type": "object"}}]}


@pytest.fixture(scope="module")
def emu():
    with pytps.Emulator(ttft_ms=0.1, itl_us=10.0, agent_turns=1000, agent_calls=2, agent_invalid=0.5) as e:
        yield e


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=conversation())
def test_turns_and_results_match_the_reference(emu, api, steps):
    path, payload = body(steps, api)
    r = httpx.post(emu.base_url + path, json={"model": "m", **payload}, timeout=10)
    assert r.status_code == 200, r.text
    [rec] = emu.wait_truth(1)
    emu.truth(clear=True)
    turn, results = reference(steps, api)
    assert rec["turn"] == turn
    assert [x["id"] for x in rec["tool_results"]] == results
    for call in rec["tool_calls"]:
        json.loads(call["arguments"])  # valid or planted, always JSON
