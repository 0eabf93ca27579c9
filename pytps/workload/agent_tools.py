"""Mocked tools and agent tasks for live tool loops (docs/agents.md, "Live tool loops").

A tool spec is the JSON Schema of its arguments, a latency (a --think-time style distribution:
``S``, ``S:SD``, ``LO-HI``, ``exp:MEAN`` seconds), and what it returns: ``result_tokens`` tokens of
seeded words, or a ``template`` whose ``{name}``, ``{id}`` and ``{arguments}`` are filled in.
A task is a prompt with the tools and, when known, the reference its final answer is graded by.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.sessions import ThinkTime
from pytps.workload.trajectories import AgentCall, filler

__all__ = ["AgentTask", "ToolSpec", "check_arguments", "load_tools", "task_set"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    latency: ThinkTime = field(default_factory=lambda: ThinkTime("fixed", 0.1))
    result_tokens: int = 50
    template: str | None = None
    description: str = ""

    def spec(self) -> dict[str, Any]:
        """The API-neutral tool spec ({name, description, parameters}) sent with each turn."""
        d: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            d["description"] = self.description
        return d

    def result(self, call: AgentCall) -> str:
        if self.template is not None:
            return self.template.format(name=call.name, id=call.id, arguments=call.arguments)
        return filler(self.result_tokens, f"tool:{call.id}")

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> ToolSpec:
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: a tool needs a 'name'")
        params = raw.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}: 'parameters' must be a JSON Schema object")
        tokens = raw.get("result_tokens", 50)
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            raise ConfigError(f"{where}: 'result_tokens' must be an integer >= 1")
        template = raw.get("template")
        return cls(
            name,
            dict(params),
            ThinkTime.parse(raw.get("latency_s", 0.1)),
            tokens,
            template if isinstance(template, str) else None,
            str(raw.get("description", "")),
        )


def load_tools(spec: str | Path | Sequence[Mapping[str, Any]]) -> list[ToolSpec]:
    """Tool specs from a JSON file (a list of objects: name, parameters, latency_s, result_tokens,
    template, description) or the objects themselves."""
    if isinstance(spec, (str, Path)):
        try:
            raw = json.loads(Path(spec).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read tools {str(spec)!r}: {e.strerror or e}") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"tools {str(spec)!r}: not JSON ({e.msg})") from None
    else:
        raw = list(spec)
    if not isinstance(raw, list) or not raw:
        raise ConfigError("tools: expected a non-empty list of tool objects")
    return [ToolSpec.parse(t, f"tool {i}") for i, t in enumerate(raw)]


def check_arguments(tool: ToolSpec | None, arguments: str) -> str | None:
    """Why a call's arguments are invalid (not JSON, or against its tool's JSON Schema; an unknown
    tool), or None when valid: the tool-call validity rate's one rule."""
    if tool is None:
        return "no such tool"
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as e:
        return f"not JSON ({e.msg})"
    import jsonschema

    try:
        jsonschema.validate(value, tool.parameters)
    except jsonschema.ValidationError as e:
        return str(e.message)
    except jsonschema.SchemaError as e:
        return f"the tool's schema is invalid: {e.message}"
    return None


@dataclass(frozen=True)
class AgentTask:
    """A live loop's task: its prompt, tools, and the dataset record it is graded by (or None)."""

    id: str
    prompt: str
    tools: tuple[ToolSpec, ...]
    record: Mapping[str, Any] | None = None
    system: str = ""


DEFAULT_TOOLS = (
    ToolSpec(
        "search",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        ThinkTime("fixed", 0.1),
        40,
    ),
)


def task_set(spec: str, tools: Sequence[ToolSpec] = DEFAULT_TOOLS, count: int | None = None) -> list[AgentTask]:
    """Tasks from ``tasks:NAMES:COUNT[:SEED]`` (the built-in graded task sets), or COUNT ungraded
    prompts (``prompts:COUNT``)."""
    parts = spec.split(":")
    if parts[0] == "prompts" and len(parts) == 2 and parts[1].isdigit():
        rng = random.Random(0)
        n = int(parts[1])
        return [
            AgentTask(f"prompt-{i}", f"Task {i}: " + filler(rng.randint(20, 60), f"task:{i}"), tuple(tools))
            for i in range(n)
        ]
    if parts[0] != "tasks" or len(parts) < 3 or not parts[2].isdigit():
        raise ConfigError(f"agent tasks {spec!r}: use tasks:NAMES:COUNT[:SEED] or prompts:COUNT")
    from pytps.workload.tasks import TaskWorkload

    seed = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0
    records = TaskWorkload(parts[1], seed=seed).records(count or int(parts[2]))
    return [AgentTask(str(r["id"]), str(r["prompt"]), tuple(tools), r) for r in records]
