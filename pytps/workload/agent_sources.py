"""Where agent trajectories come from (docs/agents.md): the seeded generator
(``synthetic:turns=…,context=…``), the set shipped with pytps (``example``), and importers of the
common public forms: OpenAI-style ``messages`` with ``tool_calls`` and ``tool`` messages, SWE-agent
``.traj`` files, and ShareGPT-style ``conversations`` (``from``/``value`` with ``function_call``
and ``observation`` turns, the form agentic conversation sets such as those sglang's agentic
benchmark loads are published in)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError, read_json_or_lines
from pytps.workload.datasets import estimate_tokens
from pytps.workload.trajectories import (
    AgentCall,
    AgentMessage,
    AgentTurn,
    Trajectory,
    filler,
    load_trajectories,
    parse_trajectory,
)

__all__ = ["SyntheticAgents", "agent_trajectories", "import_trajectories", "shipped_trajectories"]

SHIPPED = "agents_example.jsonl"
# The tools every generated trajectory offers (a coding agent's).
SYNTH_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "bash",
        "description": "Run a shell command in the repository.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
            "required": ["path"],
        },
    },
)


def _range(text: str, key: str, cast: type = int) -> tuple[Any, Any]:
    lo, sep, hi = text.partition("-")
    try:
        a = cast(lo)
        b = cast(hi) if sep else a
    except ValueError:
        raise ConfigError(f"synthetic agents: {key}={text!r} must be a number or a range a-b") from None
    if not 0 <= a <= b:
        raise ConfigError(f"synthetic agents: {key}={text!r} must be a range a-b with 0 <= a <= b")
    return a, b


@dataclass(frozen=True)
class SyntheticAgents:
    """Seeded trajectories shaped like AA-AgentPerf's published figures (docs/agents.md):
    turns uniform in [turns_min, turns_max]; the context grows from `first` tokens (system prompt
    and task) to about `context` tokens at the last turn, each turn adding the previous call's
    tool result (growth drawn lognormal around the even share); outputs lognormal around
    `output` tokens (σ 0.6, within [16, 4 x output]); tool times lognormal around `tool_s`
    seconds (σ 0.8, at most 30 s)."""

    count: int = 16
    turns_min: int = 20
    turns_max: int = 60
    context: int = 32000
    first: int = 2000
    output: int = 150
    tool_s: float = 1.0
    seed: int = 0

    @classmethod
    def parse(cls, spec: str) -> SyntheticAgents:
        """``synthetic:turns=20-60,context=32000,count=16,first=2000,output=150,tool_s=1,seed=0``."""
        body = spec.removeprefix("synthetic").lstrip(":")
        kw: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in body.split(","))):
            key, eq, value = part.partition("=")
            if not eq:
                raise ConfigError(f"synthetic agents: {part!r} must be key=value")
            if key == "turns":
                kw["turns_min"], kw["turns_max"] = _range(value, key)
            elif key in ("count", "context", "first", "output", "seed"):
                kw[key] = _range(value, key)[0]
            elif key == "tool_s":
                kw[key] = _range(value, key, float)[0]
            else:
                raise ConfigError(
                    f"synthetic agents: unknown key {key!r}; use turns, context, count, first, output, tool_s, seed"
                )
        s = cls(**kw)
        if s.count < 1 or s.turns_min < 1 or s.output < 1 or s.context < s.first or s.first < 1:
            raise ConfigError(f"synthetic agents: {spec!r} needs count, turns, output >= 1 and 1 <= first <= context")
        return s

    def trajectories(self) -> list[Trajectory]:
        return [self.one(i) for i in range(self.count)]

    def one(self, i: int) -> Trajectory:
        rng = random.Random(f"pytps:{self.seed}:agent:{i}")
        n = rng.randint(self.turns_min, self.turns_max)
        tid = f"synthetic-{self.seed}-{i}"
        share = (self.context - self.first) / max(1, n)
        turns: list[AgentTurn] = []
        prev_calls: tuple[AgentCall, ...] = ()
        system = AgentMessage(
            "system", filler(max(1, self.first // 2), f"{tid}:system"), filler_tokens=max(1, self.first // 2)
        )
        task_tokens = max(1, self.first - self.first // 2)
        for k in range(n):
            out = min(4 * self.output, max(16, round(self.output * math.exp(rng.gauss(0, 0.6)))))
            if k == 0:
                msgs: tuple[AgentMessage, ...] = (
                    system,
                    AgentMessage("user", filler(task_tokens, f"{tid}:task"), filler_tokens=task_tokens),
                )
            else:
                grow = max(1, round(share * math.exp(rng.gauss(0, 0.5)) * 0.88) - out)
                msgs = tuple(
                    AgentMessage(
                        "tool",
                        filler(grow, f"{tid}:{k}:{j}"),
                        tool_call_id=c.id,
                        name=c.name,
                        filler_tokens=grow,
                    )
                    for j, c in enumerate(prev_calls[:1])
                ) + tuple(AgentMessage("tool", "ok", tool_call_id=c.id, name=c.name) for c in prev_calls[1:])
            last = k == n - 1
            reply: AgentMessage | None
            if last:
                reply = None
                prev_calls = ()
            else:
                tool = SYNTH_TOOLS[rng.randrange(len(SYNTH_TOOLS))]
                args = json.dumps({"command": f"step {k}"} if tool["name"] == "bash" else {"path": f"src/m{k}.py"})
                prev_calls = (AgentCall(f"call_{tid}_{k}", tool["name"], args),)
                text_tokens = max(1, out - estimate_tokens(args))
                reply = AgentMessage(
                    "assistant", filler(text_tokens, f"{tid}:{k}:reply"), prev_calls, filler_tokens=text_tokens
                )
            tool_s = 0.0 if last else min(30.0, round(self.tool_s * math.exp(rng.gauss(0, 0.8)), 3))
            turns.append(AgentTurn(msgs, out, tool_s, reply))
        return Trajectory(tid, tuple(turns), SYNTH_TOOLS, {"source": f"synthetic seed {self.seed}"})


def shipped_trajectories() -> list[Trajectory]:
    """The generated set shipped in the package (docs/agents.md): 12 trajectories of 10-30
    turns, contexts to 16k tokens (SyntheticAgents(count=12, turns 10-30, context 16000, seed 1))."""
    return load_trajectories(Path(__file__).resolve().parent / "example_traces" / SHIPPED)


SHIPPED_SPEC = SyntheticAgents(count=12, turns_min=10, turns_max=30, context=16000, seed=1)


# ---- importers ---------------------------------------------------------------------------------


def _from_messages(messages: Sequence[Any], tools: Sequence[Any], tid: str, where: str, tool_s: float) -> Trajectory:
    """Turns of an OpenAI-style conversation: each assistant message ends a turn (its reply);
    the messages before it since the previous one are the turn's new messages."""
    raw_turns: list[dict[str, Any]] = []
    pending: list[Any] = []
    for m in messages:
        if not isinstance(m, Mapping):
            raise ConfigError(f"{where}: a message must be an object")
        if m.get("role") == "assistant":
            content = m.get("content")
            text = content if isinstance(content, str) else ""
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function", c) if isinstance(c, Mapping) else {}
                calls.append({"id": c.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments", "{}")})
            args = "".join(str(c["arguments"]) for c in calls)
            out = max(1, estimate_tokens(text + args)) if text or args else 1
            raw_turns.append(
                {
                    "messages": pending,
                    "output_tokens": out,
                    "tool_s": tool_s if calls else 0.0,
                    "reply": {"role": "assistant", "content": text, "tool_calls": calls},
                }
            )
            pending = []
        else:
            pending.append(dict(m))
    if not raw_turns:
        raise ConfigError(f"{where}: the conversation has no assistant message, so no turn to replay")
    raw_turns[-1].pop("reply", None)
    tool_specs = []
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else {}
        spec = {"name": fn.get("name"), "parameters": fn.get("parameters") or fn.get("input_schema") or {}}
        if fn.get("description"):
            spec["description"] = fn["description"]
        tool_specs.append(spec)
    return parse_trajectory({"id": tid, "tools": tool_specs, "turns": raw_turns}, where)


def _sharegpt(conv: Sequence[Any], tid: str, where: str, tool_s: float) -> Trajectory:
    """from/value turns: system, human, gpt, function_call (the call: JSON {name, arguments}),
    observation (its result)."""
    messages: list[dict[str, Any]] = []
    n_calls = 0
    for c in conv:
        if not isinstance(c, Mapping):
            raise ConfigError(f"{where}: a conversation turn must be an object")
        who, value = c.get("from"), c.get("value", "")
        value = value if isinstance(value, str) else json.dumps(value)
        if who == "system":
            messages.append({"role": "system", "content": value})
        elif who in ("human", "user"):
            messages.append({"role": "user", "content": value})
        elif who in ("gpt", "assistant"):
            messages.append({"role": "assistant", "content": value})
        elif who == "function_call":
            try:
                call = json.loads(value)
            except json.JSONDecodeError:
                call = {"name": "tool", "arguments": value}
            cid = f"call_{n_calls}"
            n_calls += 1
            entry = {
                "id": cid,
                "function": {"name": str(call.get("name", "tool")), "arguments": call.get("arguments", {})},
            }
            if messages and messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]:
                messages[-1]["tool_calls"] = [entry]
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [entry]})
        elif who in ("observation", "tool", "function"):
            cid = f"call_{n_calls - 1}" if n_calls else "call_0"
            messages.append({"role": "tool", "tool_call_id": cid, "content": value})
        else:
            raise ConfigError(f"{where}: unknown speaker {who!r}")
    return _from_messages(messages, [], tid, where, tool_s)


def _swe_agent(obj: Mapping[str, Any], tid: str, where: str, tool_s: float) -> Trajectory:
    """A SWE-agent .traj: its `history` (system/user/assistant messages, observations as user or
    tool messages; SWE-agent 1.x puts tool_calls on the assistant ones), with each step's
    `execution_time` from `trajectory` as its tool time when given."""
    history = obj.get("history")
    if not isinstance(history, list):
        raise ConfigError(f"{where}: a .traj needs a 'history' list")
    raw_steps = obj.get("trajectory")
    steps: list[Any] = raw_steps if isinstance(raw_steps, list) else []
    times = [s.get("execution_time") for s in steps if isinstance(s, Mapping)]
    messages = []
    for h in history:
        if not isinstance(h, Mapping) or h.get("role") not in ("system", "user", "assistant", "tool"):
            continue
        m: dict[str, Any] = {"role": h["role"], "content": h.get("content") or ""}
        if h.get("tool_calls"):
            m["tool_calls"] = h["tool_calls"]
        if h["role"] == "tool":
            ids = h.get("tool_call_ids") or [h.get("tool_call_id")]
            m["tool_call_id"] = str(ids[0]) if ids and ids[0] else "call"
        messages.append(m)
    t = _from_messages(messages, obj.get("tools") or [], tid, where, tool_s)
    turns = list(t.turns)
    for k, step_s in enumerate(times[: len(turns)]):
        if isinstance(step_s, (int, float)) and not isinstance(step_s, bool) and 0 <= step_s < 86400:
            turns[k] = AgentTurn(turns[k].messages, turns[k].output_tokens, float(step_s), turns[k].reply)
    return Trajectory(t.id, tuple(turns), t.tools, {"source": "swe-agent"})


def import_trajectories(path: str | Path, tool_s: float = 0.0) -> list[Trajectory]:
    """Reads a file in any of the forms: pytps's JSONL (objects with "turns"), OpenAI-style
    ({"messages": [...], "tools": [...]} a line, or one such object), ShareGPT-style
    ({"conversations": [...]}), or a SWE-agent .traj (one JSON object with "history").
    tool_s: the tool time after each tool-call turn where the form records none."""
    p = Path(path)
    data = read_json_or_lines(p, "cannot read trajectories {path!r}: {reason}", "{name} line {n}: not JSON ({msg})")
    objs = data if isinstance(data, list) else [data]
    out = []
    for n, obj in enumerate(objs, 1):
        where = f"{p.name} item {n}"
        if not isinstance(obj, Mapping):
            raise ConfigError(f"{where}: expected a JSON object")
        tid = str(obj.get("id", obj.get("instance_id", f"{p.stem}-{n}")))
        if "turns" in obj:
            out.append(parse_trajectory(obj, where))
        elif "history" in obj:
            out.append(_swe_agent(obj, tid, where, tool_s))
        elif "conversations" in obj:
            out.append(_sharegpt(obj["conversations"], tid, where, tool_s))
        elif "messages" in obj:
            out.append(_from_messages(obj["messages"], obj.get("tools") or [], tid, where, tool_s))
        else:
            raise ConfigError(f"{where}: not a trajectory (no 'turns', 'messages', 'conversations' or 'history')")
    if not out:
        raise ConfigError(f"{p.name}: no trajectories in the file")
    return out


def agent_trajectories(spec: str, tool_s: float = 0.0) -> list[Trajectory]:
    """--agents' workload: ``synthetic:…``, ``example`` (the shipped set), or a file."""
    if spec == "example":
        return shipped_trajectories()
    if spec.startswith("synthetic"):
        return SyntheticAgents.parse(spec).trajectories()
    return import_trajectories(spec, tool_s)
