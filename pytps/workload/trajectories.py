"""Agent trajectories (docs/agents.md): what an agent sent, turn by turn, so that the same work
can be replayed on any endpoint.

An agent is a sequence of turns. Turn k sends the whole conversation so far: every earlier
turn's new messages and its recorded reply (with its tool calls), then turn k's own new messages
(the tool results of turn k-1, or the task). It asks for the recorded output length, and after
it the agent spends the recorded tool time before turn k+1. Replayed replies are the recorded
ones, not the server's, so every endpoint gets the same contexts.

The JSONL form (one trajectory a line):

    {"id": "t1", "tools": [{"name": "grep", "description": "...", "parameters": {...}}],
     "turns": [{"messages": [{"role": "user", "content": "Fix the bug."}],
                "output_tokens": 150, "tool_s": 1.2,
                "reply": {"role": "assistant", "content": "",
                          "tool_calls": [{"id": "c1", "name": "grep", "arguments": "{...}"}]}},
               {"messages": [{"role": "tool", "tool_call_id": "c1", "content": {"tokens": 800}}],
                "output_tokens": 90, "tool_s": 0}]}

A content may be text, or ``{"tokens": N}``: N tokens of seeded filler words (4 characters a
token), so a generated set is small on disk and the same on every load.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.words import WORDS

__all__ = [
    "AgentCall",
    "AgentMessage",
    "AgentTurn",
    "Trajectory",
    "filler",
    "load_trajectories",
    "parse_trajectory",
    "trajectory_json",
    "write_trajectories",
]

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class AgentCall:
    """A tool call of an assistant message: its id, the tool's name, its arguments (JSON text)."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class AgentMessage:
    """One message in the API-neutral form: role system/user/assistant/tool; an assistant's
    tool_calls; a tool result's tool_call_id (and the tool's name, when known)."""

    role: str
    content: str = ""
    tool_calls: tuple[AgentCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    filler_tokens: int | None = None  # the content is filler of this many tokens (written back so)


@dataclass(frozen=True)
class AgentTurn:
    """messages: what the turn adds before its request; reply: the recorded answer appended after
    it (None on the last turn, or when unknown: then nothing is appended); output_tokens: the
    recorded output length, asked for as max_tokens; tool_s: the tool time after the turn."""

    messages: tuple[AgentMessage, ...]
    output_tokens: int
    tool_s: float = 0.0
    reply: AgentMessage | None = None


@dataclass(frozen=True)
class Trajectory:
    id: str
    turns: tuple[AgentTurn, ...]
    tools: tuple[dict[str, Any], ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def context(self, k: int) -> list[AgentMessage]:
        """The conversation turn k sends."""
        out: list[AgentMessage] = []
        for j, turn in enumerate(self.turns[: k + 1]):
            out += turn.messages
            if j < k and turn.reply is not None:
                out.append(turn.reply)
        return out

    @property
    def tool_s(self) -> float:
        return sum(t.tool_s for t in self.turns)


def filler(tokens: int, seed: str) -> str:
    """`tokens` tokens of seeded words: about 4 characters a token, as the emulator counts."""
    rng = random.Random(seed)
    target = 4 * max(1, tokens)
    parts: list[str] = []
    size = 0
    while size < target:
        w = rng.choice(WORDS)
        parts.append(w)
        size += len(w) + 1
    text = " ".join(parts)
    return text[:target]


def _where(where: str, msg: str) -> ConfigError:
    return ConfigError(f"{where}: {msg}")


def _content(value: Any, where: str, seed: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and set(value) == {"tokens"}:
        return filler(_filler_tokens(value, where), seed)
    if isinstance(value, list):  # content parts: their text
        return "".join(p.get("text", "") if isinstance(p, Mapping) else str(p) for p in value)
    raise _where(where, f'a content must be text or {{"tokens": N}}, got {type(value).__name__}')


def _filler_tokens(value: Mapping[str, Any], where: str) -> int:
    n = value["tokens"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise _where(where, f'"tokens" must be an integer >= 1, got {n!r}')
    return n


def _call(raw: Any, where: str) -> AgentCall:
    if not isinstance(raw, Mapping):
        raise _where(where, "a tool call must be an object")
    inner = raw.get("function")
    fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else raw
    name, args = fn.get("name"), fn.get("arguments", "{}")
    if not isinstance(name, str) or not name:
        raise _where(where, 'a tool call needs a "name"')
    if not isinstance(args, str):
        args = json.dumps(args)
    cid = raw.get("id")
    if not isinstance(cid, str) or not cid:
        raise _where(where, 'a tool call needs an "id" (its tool result names it)')
    return AgentCall(cid, name, args)


def _message(raw: Any, where: str, seed: str) -> AgentMessage:
    if not isinstance(raw, Mapping):
        raise _where(where, "a message must be an object")
    role = raw.get("role")
    if role not in ROLES:
        raise _where(where, f"role must be one of {', '.join(ROLES)}, got {role!r}")
    calls = tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(raw.get("tool_calls") or ()))
    call_id = raw.get("tool_call_id")
    if role == "tool" and not isinstance(call_id, str):
        raise _where(where, 'a tool message needs a "tool_call_id"')
    name = raw.get("name")
    content = raw.get("content")
    tokens = _filler_tokens(content, where) if isinstance(content, Mapping) and set(content) == {"tokens"} else None
    return AgentMessage(
        role, _content(content, where, seed), calls, call_id, name if isinstance(name, str) else None, tokens
    )


def parse_trajectory(raw: Any, where: str) -> Trajectory:
    """One trajectory from its JSON object; ConfigError naming `where` and the field otherwise."""
    if not isinstance(raw, Mapping):
        raise _where(where, "a trajectory must be a JSON object")
    tid = str(raw.get("id", where))
    turns_raw = raw.get("turns")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise _where(where, 'a trajectory needs a non-empty "turns" list')
    tools = raw.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in tools):
        raise _where(where, '"tools" must be a list of objects with a "name"')
    turns = []
    for k, t in enumerate(turns_raw):
        w = f"{where} turn {k}"
        if not isinstance(t, Mapping):
            raise _where(w, "a turn must be an object")
        msgs = t.get("messages") or []
        if not isinstance(msgs, list):
            raise _where(w, '"messages" must be a list')
        out = t.get("output_tokens")
        if not isinstance(out, int) or isinstance(out, bool) or out < 1:
            raise _where(w, f'"output_tokens" must be an integer >= 1, got {out!r}')
        tool_s = t.get("tool_s", 0.0)
        if not isinstance(tool_s, (int, float)) or isinstance(tool_s, bool) or not 0 <= tool_s < 86400:
            raise _where(w, f'"tool_s" must be seconds within [0, 86400), got {tool_s!r}')
        messages = tuple(_message(m, f"{w} message {i}", f"{tid}:{k}:{i}") for i, m in enumerate(msgs))
        reply = t.get("reply")
        turns.append(
            AgentTurn(
                messages,
                out,
                float(tool_s),
                _message(reply, f"{w} reply", f"{tid}:{k}:reply") if reply is not None else None,
            )
        )
    return Trajectory(tid, tuple(turns), tuple(dict(t) for t in tools), dict(raw.get("meta") or {}))


def load_trajectories(path: str | os.PathLike[str]) -> list[Trajectory]:
    """The trajectories of a JSONL file in pytps's form (docs/agents.md)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read trajectories {str(p)!r}: {e.strerror or e}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p.name} line {n}: not JSON ({e.msg})") from None
        out.append(parse_trajectory(raw, f"{p.name} line {n}"))
    if not out:
        raise ConfigError(f"{p.name}: no trajectories in the file")
    return out


def _message_json(m: AgentMessage) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": {"tokens": m.filler_tokens} if m.filler_tokens else m.content}
    if m.tool_calls:
        d["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        d["name"] = m.name
    return d


def trajectory_json(t: Trajectory) -> dict[str, Any]:
    """The JSONL object of a trajectory (contents written out as text)."""
    turns = []
    for turn in t.turns:
        d: dict[str, Any] = {
            "messages": [_message_json(m) for m in turn.messages],
            "output_tokens": turn.output_tokens,
            "tool_s": turn.tool_s,
        }
        if turn.reply is not None:
            d["reply"] = _message_json(turn.reply)
        turns.append(d)
    out: dict[str, Any] = {"id": t.id, "tools": list(t.tools), "turns": turns}
    if t.meta:
        out["meta"] = t.meta
    return out


def write_trajectories(path: str | os.PathLike[str], trajectories: Iterable[Trajectory]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for t in trajectories:
            f.write(json.dumps(trajectory_json(t)) + "\n")


def iter_calls(t: Trajectory) -> Iterator[AgentCall]:
    for turn in t.turns:
        if turn.reply is not None:
            yield from turn.reply.tool_calls
