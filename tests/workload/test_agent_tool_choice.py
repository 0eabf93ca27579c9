"""--tool-choice and --no-parallel-tool-calls in each API's own form (docs/agents.md, "Live tool
loops"): OpenAI's two fields for chat and Responses, Anthropic's tool_choice object."""

from __future__ import annotations

import pytest

from pytps.errors import ConfigError
from pytps.runner.agents import AgentSettings
from pytps.workload.agent_requests import agent_request
from pytps.workload.trajectories import AgentMessage

TOOLS = [{"name": "search", "parameters": {"type": "object", "properties": {}}}]
MSGS = [AgentMessage("user", "Find it.")]


def body(api: str, tools=TOOLS, **kw):  # type: ignore[no-untyped-def]
    return agent_request(api, "m", MSGS, tools, 16, **kw)[1]


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses"])
def test_openai_forms(api: str) -> None:
    b = body(api, tool_choice="required", parallel_tool_calls=False)
    assert b["tool_choice"] == "required" and b["parallel_tool_calls"] is False
    b = body(api, tool_choice="auto")
    assert b["tool_choice"] == "auto" and "parallel_tool_calls" not in b
    b = body(api)
    assert "tool_choice" not in b and "parallel_tool_calls" not in b


def test_anthropic_form() -> None:
    assert body("anthropic", tool_choice="required")["tool_choice"] == {"type": "any"}
    assert body("anthropic", tool_choice="none")["tool_choice"] == {"type": "none"}
    assert body("anthropic", parallel_tool_calls=False)["tool_choice"] == {
        "type": "auto",
        "disable_parallel_tool_use": True,
    }
    assert "tool_choice" not in body("anthropic")


def test_without_tools_nothing_is_asked() -> None:
    b = body("openai-chat", tools=[], tool_choice="required", parallel_tool_calls=False)
    assert "tool_choice" not in b and "parallel_tool_calls" not in b


def test_a_bad_choice_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="--tool-choice must be one of auto, required, none"):
        body("openai-chat", tool_choice="always")
    with pytest.raises(ConfigError, match="--tool-choice"):
        AgentSettings("http://127.0.0.1:1", tool_choice="always")
