"""Multi-turn sessions (`pytps run --turns K --sessions N`): chat and agent traffic, where each
turn resends the whole conversation so far, and a server's prefix cache decides its TTFT.

A session sends turn k with the history: every earlier user message and **the answer the server
actually gave** to it (its streamed text), then the new user message. `--max-context-tokens`
drops the oldest turns when the history would exceed it, as chat applications do. A failed turn
ends its session (the journal's `session_end` says so). Between turns a session may think
(`--think-time`: a fixed value or drawn from a distribution); a thinking session is still in
flight, so `--concurrency` counts sessions in flight, and the steady window is defined on them
(docs/metrics.md).

New user messages are the synthetic workload's (sized like single prompts, calibrated from the
first turns only: a later turn's prompt_tokens mix in a history the workload did not size), or a
ShareGPT conversation's own human turns.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.datasets import read_dataset_text
from pytps.workload.synthetic import LengthSpec, Prompt, SyntheticWorkload
from pytps.workload.tasks import TaskWorkload

__all__ = ["SessionPlan", "SessionWorkload", "ThinkTime", "load_conversations"]

_NUM = r"(\d+(?:\.\d*)?|\.\d+)"
_THINK_FIXED = re.compile(rf"\s*{_NUM}\s*")
_THINK_NORMAL = re.compile(rf"\s*{_NUM}\s*:\s*{_NUM}\s*")
_THINK_UNIFORM = re.compile(rf"\s*{_NUM}\s*-\s*{_NUM}\s*")
_THINK_EXP = re.compile(rf"\s*exp\s*:\s*{_NUM}\s*")
_HUMAN_ROLES = ("human", "user")


@dataclass(frozen=True)
class ThinkTime:
    """Seconds between a turn's answer and the next turn: `S` (fixed), `S:SD` (normal, clipped at
    0), `LO-HI` (uniform) or `exp:MEAN` (exponential, a user's memoryless pause)."""

    kind: str
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, text: str | float | None) -> ThinkTime:
        if text is None:
            return cls("fixed", 0.0)
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = str(text)
        if isinstance(text, str):
            if m := _THINK_FIXED.fullmatch(text):
                return cls("fixed", float(m[1]))
            if m := _THINK_NORMAL.fullmatch(text):
                return cls("normal", float(m[1]), float(m[2]))
            if (m := _THINK_UNIFORM.fullmatch(text)) and float(m[1]) <= float(m[2]):
                return cls("uniform", float(m[1]), float(m[2]))
            if m := _THINK_EXP.fullmatch(text):
                return cls("exp", float(m[1]))
        raise ConfigError(
            f"--think-time {text!r} is not a time in seconds: use S (fixed, e.g. 2), S:SD (normal, e.g. 2:0.5), "
            "LO-HI (uniform, e.g. 1-5) or exp:MEAN (exponential, e.g. exp:3)"
        )

    def sample(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "normal":
            return max(0.0, rng.gauss(self.a, self.b))
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        return rng.expovariate(1 / self.a) if self.a > 0 else 0.0

    def __str__(self) -> str:
        return {
            "fixed": f"{self.a:g}",
            "normal": f"{self.a:g}:{self.b:g}",
            "uniform": f"{self.a:g}-{self.b:g}",
            "exp": f"exp:{self.a:g}",
        }[self.kind]


@dataclass
class SessionPlan:
    """How many sessions of how many turns; validate() before use."""

    turns: int = 1
    sessions: int = 10
    warmup: int = 0  # sessions run first and left out of the summary
    max_context_tokens: int | None = None
    think_time: ThinkTime = field(default_factory=lambda: ThinkTime("fixed", 0.0))

    def validate(self) -> SessionPlan:
        for name, value, low in (("--turns", self.turns, 1), ("--sessions", self.sessions, 1),
                                 ("--warmup", self.warmup, 0)):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
        m = self.max_context_tokens
        if m is not None and (not isinstance(m, int) or isinstance(m, bool) or m < 1):
            raise ConfigError(f"--max-context-tokens must be an integer >= 1, got {m!r}")
        return self

    def describe(self) -> dict[str, Any]:
        # results.json's names: warm-up counts sessions here, and the think time is its spec.
        described = {**asdict(self), "think_time_s": str(self.think_time)}
        described["warmup_sessions"] = described.pop("warmup")
        del described["think_time"]
        return described


def load_conversations(path: str | os.PathLike[str]) -> list[list[str]]:
    """The human turns of each conversation of a ShareGPT JSON file (a list of {"conversations":
    [{"from", "value"}]}), or of a JSONL file of {"messages": [...]} (its user messages). The
    recorded replies are not used: a session sends the server's own answers."""
    name = os.fspath(path)
    raw = read_dataset_text(name)
    items: list[tuple[str, Any]] = []
    if raw.lstrip().startswith("["):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--dataset {name}: not JSON ({exc.msg}, line {exc.lineno})") from None
        items = [(f"{name}[{k}]", item) for k, item in enumerate(data)]
    else:
        for k, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    items.append((f"{name}:{k}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"--dataset {name}, line {k}: not JSON ({exc.msg})") from None
    out = []
    for where, item in items:
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: not an object")
        if "conversations" in item:
            convo = item["conversations"]
            turns = [t.get("value") for t in convo if isinstance(t, dict) and t.get("from") in _HUMAN_ROLES]
        elif "messages" in item:
            turns = [m.get("content") for m in item["messages"] if isinstance(m, dict) and m.get("role") == "user"]
        elif "prompt" in item:
            turns = [item["prompt"]]
        else:
            raise ConfigError(f'{where}: no "conversations" (ShareGPT), "messages" or "prompt"')
        texts: list[str] = [t for t in turns if isinstance(t, str) and t.strip()]
        if texts:
            out.append(texts)
    if not out:
        raise ConfigError(f"--dataset {name}: no conversation with a human turn")
    return out


class SessionWorkload:
    """The prompts of multi-turn sessions. The driver (pytps.runner.sessions.run_sessions) decides each request's
    messages and hands them over with set(); the runner fetches them with prompt(i)."""

    def __init__(
        self,
        plan: SessionPlan,
        *,
        input_tokens: LengthSpec | str | int = 256,
        output_tokens: LengthSpec | str | int = 128,
        conversations: list[list[str]] | None = None,
        source: str | None = None,
        seed: int = 0,
        salt: str = "",
        tasks: TaskWorkload | None = None,
    ) -> None:
        self.plan = plan.validate()
        # Built-in graded tasks (pytps.workload.tasks): each turn asks the next item, so accuracy
        # can be read by turn; its item and reference go with the turn's prompt.
        self.tasks = tasks
        self._items: dict[int, tuple[str, dict[str, Any]]] = {}
        self.sizer = SyntheticWorkload(input_tokens, output_tokens, seed=seed, salt=salt)
        self.conversations = conversations
        self.source = source
        self.seed = seed
        self.salt = salt
        self._pending: dict[int, Prompt] = {}

    def turns_of(self, session: int) -> int:
        if self.conversations is None:
            return self.plan.turns
        return min(self.plan.turns, len(self.conversations[session % len(self.conversations)]))

    def new_message(self, session: int, turn: int, i: int) -> tuple[str, int, int | None]:
        """(text, max_tokens, planned tokens) of the new user message of a session's turn."""
        rng = random.Random(f"pytps:{self.seed}:session:{session}:{turn}")
        max_tokens = self.sizer.output_tokens.sample(rng)
        if self.conversations is not None:
            text = self.conversations[session % len(self.conversations)][turn]
            return text, max_tokens, None
        if self.tasks is not None:
            item, text, reference = self.tasks.item(session * self.plan.turns + turn)
            self._items[i] = (item, reference)
            return text, self.tasks.output_tokens.sample(rng), None
        target = self.sizer.input_tokens.sample(rng)
        p = self.sizer.sized_prompt(i, target, max_tokens, tag=f"s{session}t{turn}-")
        return p.text or "", max_tokens, p.planned_tokens

    def set(self, i: int, prompt: Prompt) -> None:
        if i in self._items:
            prompt.item, prompt.reference = self._items.pop(i)
        self._pending[i] = prompt

    def prompt(self, i: int) -> Prompt:
        return self._pending[i]  # kept until forget(): the runner may build request i twice

    def forget(self, i: int) -> None:
        self._pending.pop(i, None)

    def calibrate(self, planned_tokens: int | None, reported_prompt_tokens: int | None) -> None:
        self.sizer.calibrate(planned_tokens, reported_prompt_tokens)

    def prompt_calibration(self) -> dict[str, Any] | None:
        return None if self.conversations is not None else self.sizer.prompt_calibration()

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": "sessions", "seed": self.seed, "salt": self.salt, "sessions": self.plan.describe()}
        if self.conversations is not None:
            d["source"] = self.source
            d["records"] = len(self.conversations)
        elif self.tasks is not None:
            d["tasks"] = list(self.tasks.tasks)
            d["input_tokens"] = str(self.tasks.input_tokens)
        else:
            d["input_tokens"] = str(self.sizer.input_tokens)
        d["output_tokens"] = str((self.tasks or self.sizer).output_tokens)
        return d
