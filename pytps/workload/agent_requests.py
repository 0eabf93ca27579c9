"""An agent's turn in each API's own shape (docs/agents.md, "Each API's shape"): Chat Completions
``tool`` messages after an assistant message with ``tool_calls``; Responses ``function_call`` and
``function_call_output`` items; Anthropic ``tool_use`` blocks in the assistant message and
``tool_result`` blocks in the next user message (consecutive messages of one role merged, as
the Messages API requires alternation)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.trajectories import AgentMessage

__all__ = ["AGENT_APIS", "agent_request", "tools_for"]

AGENT_APIS = ("openai-chat", "openai-responses", "anthropic")
_PATHS = {"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses", "anthropic": "/v1/messages"}


def tools_for(api: str, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool specs ({name, description?, parameters}) in the API's form."""
    out: list[dict[str, Any]] = []
    for t in tools:
        params = dict(t.get("parameters") or {"type": "object", "properties": {}})
        desc = t.get("description")
        if api == "anthropic":
            d: dict[str, Any] = {"name": t["name"], "input_schema": params}
        elif api == "openai-responses":
            d = {"type": "function", "name": t["name"], "parameters": params}
        else:
            fn: dict[str, Any] = {"name": t["name"], "parameters": params}
            if desc:
                fn["description"] = desc
            out.append({"type": "function", "function": fn})
            continue
        if desc:
            d["description"] = desc
        out.append(d)
    return out


def _chat(messages: Sequence[AgentMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.tool_calls:
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _apart(messages: Sequence[AgentMessage]) -> tuple[str, list[AgentMessage]]:
    """Responses and Anthropic carry the system prompt apart from the conversation (instructions,
    system): the system messages' text joined, and the other messages in order."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    return system, [m for m in messages if m.role != "system"]


def _responses(messages: Sequence[AgentMessage]) -> tuple[str, list[dict[str, Any]]]:
    system, conversation = _apart(messages)
    items: list[dict[str, Any]] = []
    for m in conversation:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})
            continue
        if m.content or not m.tool_calls:
            items.append({"role": m.role, "content": m.content})
        for c in m.tool_calls:
            items.append({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments})
    return system, items


def _input_of(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return {"raw": arguments}  # a model's broken arguments still go back as an object


def _anthropic(messages: Sequence[AgentMessage]) -> tuple[str, list[dict[str, Any]]]:
    system, conversation = _apart(messages)
    out: list[dict[str, Any]] = []
    for m in conversation:
        role = "assistant" if m.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            blocks.append({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content})
        else:
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": _input_of(c.arguments)})
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    return system, out


TOOL_CHOICES = ("auto", "required", "none")


def tool_choice_fields(api: str, choice: str | None, parallel: bool | None) -> dict[str, Any]:
    """The body fields asking for a tool choice and for parallel calls or not: OpenAI's
    `tool_choice` and `parallel_tool_calls` (chat and Responses alike); Anthropic's `tool_choice`
    object, whose "any" is OpenAI's "required" and whose `disable_parallel_tool_use` is
    parallel calls off. Nothing when neither is set (the server's defaults)."""
    if choice is not None and choice not in TOOL_CHOICES:
        raise ConfigError(f"--tool-choice must be one of {', '.join(TOOL_CHOICES)}, not {choice!r}")
    out: dict[str, Any] = {}
    if api == "anthropic":
        if choice is None and parallel is None:
            return out
        block: dict[str, Any] = {"type": {"required": "any"}.get(choice or "auto", choice or "auto")}
        if parallel is False:
            block["disable_parallel_tool_use"] = True
        out["tool_choice"] = block
        return out
    if choice is not None:
        out["tool_choice"] = choice
    if parallel is not None:
        out["parallel_tool_calls"] = parallel
    return out


def agent_request(
    api: str,
    model: str,
    messages: Sequence[AgentMessage],
    tools: Sequence[Mapping[str, Any]],
    max_tokens: int,
    *,
    stream: bool = True,
    extra_body: Mapping[str, Any] | None = None,
    previous_response_id: str | None = None,
    tool_choice: str | None = None,
    parallel_tool_calls: bool | None = None,
) -> tuple[str, dict[str, Any]]:
    """(path, body) of one agent turn: the conversation so far and the tools, asking for
    max_tokens (chat with a final usage chunk, so cached tokens are known per turn). Responses
    with previous_response_id: `messages` are only the new ones (the server holds the rest; its
    system prompt is sent again as `instructions`, which the server does not carry over).
    tool_choice (auto, required, none) and parallel_tool_calls (False: at most one call a turn)
    go with the tools, in each API's own form (tool_choice_fields)."""
    if api not in AGENT_APIS:
        raise ConfigError(f"agents speak {', '.join(AGENT_APIS)}, not {api!r}")
    body: dict[str, Any] = {"model": model}
    if api == "openai-chat":
        body["messages"] = _chat(messages)
        body["max_tokens"] = max_tokens
        if stream:
            body["stream_options"] = {"include_usage": True}
    elif api == "openai-responses":
        system, items = _responses(messages)
        if system:
            body["instructions"] = system
        body["input"] = items
        body["max_output_tokens"] = max_tokens
        if previous_response_id is not None:
            body["previous_response_id"] = previous_response_id
    else:
        system, msgs = _anthropic(messages)
        if system:
            body["system"] = system
        body["messages"] = msgs
        body["max_tokens"] = max_tokens
    if tools:
        body["tools"] = tools_for(api, tools)
        body.update(tool_choice_fields(api, tool_choice, parallel_tool_calls))
    body["stream"] = stream
    for k, v in (extra_body or {}).items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return _PATHS[api], body
