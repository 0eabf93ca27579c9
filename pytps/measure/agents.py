"""Agent figures (docs/metrics.md, "Agents"): per turn, per agent, and the run's summary. One
function computes each; the driver (pytps.runner.agents) only collects the rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytps.measure.grade_figures import wilson_interval
from pytps.measure.metrics import distribution

__all__ = ["AgentRow", "AgentSlo", "TurnRow", "agent_summary"]

NS = 1_000_000_000


@dataclass
class TurnRow:
    """One turn of one agent. Times are CLOCK_MONOTONIC ns; ttft_s and e2e_s are pytps's per-request
    TTFT and E2E (docs/metrics.md); tool_s is the tool wait measured after the turn (0 after the
    last); input_tokens and cached_tokens are the server's usage (None when not reported)."""

    agent: int
    trajectory: str
    turn: int
    response_id: str | None
    ok: bool
    error: str | None
    t_send_ns: int
    t_end_ns: int | None
    ttft_s: float | None
    e2e_s: float | None
    decode_tps: float | None
    output_tokens: int
    input_tokens: int | None
    cached_tokens: int | None
    tool_s: float = 0.0
    calls: int = 0
    invalid_calls: int = 0

    @property
    def cached_share(self) -> float | None:
        if self.input_tokens and self.cached_tokens is not None:
            return self.cached_tokens / self.input_tokens
        return None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cached_share"] = self.cached_share
        return d


@dataclass
class AgentRow:
    """One agent's trajectory or task: its turns, the time through it (first turn's send to the
    last turn's end), split into model time (its turns' E2E) and tool time (its tool waits)."""

    agent: int
    trajectory: str
    turns: list[TurnRow] = field(default_factory=list)
    finished: bool = False  # every turn ok and the trajectory (or task) ended
    success: bool | None = None  # a graded final answer's verdict (live loops with a reference)
    end: str = ""  # "answer", "step_cap", "error", "replayed"

    @property
    def time_s(self) -> float | None:
        if not self.turns or self.turns[-1].t_end_ns is None:
            return None
        return (self.turns[-1].t_end_ns - self.turns[0].t_send_ns) / NS

    @property
    def model_s(self) -> float:
        return sum(t.e2e_s or 0.0 for t in self.turns)

    @property
    def tool_s(self) -> float:
        return sum(t.tool_s for t in self.turns[:-1])

    @property
    def overhead_s(self) -> float | None:
        """The client's own time between turns (time through less model and tool time)."""
        time_s = self.time_s
        return None if time_s is None else time_s - self.model_s - self.tool_s

    @property
    def output_tokens(self) -> int:
        return sum(t.output_tokens for t in self.turns)

    @property
    def output_tps(self) -> float | None:
        """The agent's output speed: output tokens over model time (its turns' E2E)."""
        return self.output_tokens / self.model_s if self.model_s > 0 else None

    def as_dict(self) -> dict[str, Any]:
        calls = sum(t.calls for t in self.turns)
        return {
            "agent": self.agent,
            "trajectory": self.trajectory,
            "turns": len(self.turns),
            "finished": self.finished,
            "end": self.end,
            "success": self.success,
            "time_s": self.time_s,
            "model_s": self.model_s,
            "tool_s": self.tool_s,
            "overhead_s": self.overhead_s,
            "output_tokens": self.output_tokens,
            "output_tps": self.output_tps,
            "tool_calls": calls,
            "invalid_calls": sum(t.invalid_calls for t in self.turns),
        }


@dataclass(frozen=True)
class AgentSlo:
    """A per-turn tier: TTFT at most ttft_s and output speed (decode tokens/s) at least tps."""

    ttft_s: float | None = None
    tps: float | None = None

    def met(self, t: TurnRow) -> bool:
        if not t.ok:
            return False
        if self.ttft_s is not None and (t.ttft_s is None or t.ttft_s > self.ttft_s):
            return False
        return not (self.tps is not None and t.output_tokens > 1 and (t.decode_tps or 0.0) < self.tps)

    @classmethod
    def parse(cls, spec: str | None) -> AgentSlo | None:
        """``ttft=2,tps=20`` (seconds, tokens/s)."""
        if not spec:
            return None
        from pytps.errors import ConfigError

        kw: dict[str, float] = {}
        for part in spec.split(","):
            key, _, value = part.partition("=")
            name = {"ttft": "ttft_s", "ttft_s": "ttft_s", "tps": "tps", "output_tps": "tps"}.get(key.strip())
            try:
                v = float(value)
            except ValueError:
                v = -1.0
            if name is None or not v > 0:
                raise ConfigError(f"agent SLO {part!r}: use ttft=SECONDS and/or tps=TOKENS_PER_S, positive numbers")
            kw[name] = v
        return cls(**kw)


def agent_summary(agents: Sequence[AgentRow], slo: AgentSlo | None = None) -> dict[str, Any]:
    """The run's agent figures (docs/metrics.md, "Agents")."""
    turns = [t for a in agents for t in a.turns]
    ok = [t for t in turns if t.ok]
    calls = sum(t.calls for t in turns)
    invalid = sum(t.invalid_calls for t in turns)
    graded = [a for a in agents if a.success is not None]
    right = sum(1 for a in graded if a.success)
    out: dict[str, Any] = {
        "agents": len(agents),
        "agents_finished": sum(1 for a in agents if a.finished),
        "turns": len(turns),
        "turns_ok": len(ok),
        "ttft_s": distribution(t.ttft_s for t in ok),
        "e2e_s": distribution(t.e2e_s for t in ok),
        "turn_decode_tps": distribution(t.decode_tps for t in ok),
        "input_tokens": distribution(float(t.input_tokens) for t in ok if t.input_tokens is not None),
        "cached_share": distribution(t.cached_share for t in ok),
        "tool_wait_s": distribution(t.tool_s for a in agents for t in a.turns[:-1]),
        "agent_time_s": distribution(a.time_s for a in agents if a.finished),
        "agent_model_s": distribution(a.model_s for a in agents if a.finished),
        "agent_tool_s": distribution(a.tool_s for a in agents if a.finished),
        "agent_overhead_s_per_turn": distribution(
            (a.overhead_s or 0.0) / len(a.turns) for a in agents if a.finished and a.turns
        ),
        "agent_output_tps": distribution(a.output_tps for a in agents if a.finished),
        "steps_per_task": distribution(float(len(a.turns)) for a in agents if a.finished),
        "tool_calls": calls,
        "invalid_tool_calls": invalid,
        "tool_call_validity": (calls - invalid) / calls if calls else None,
        "tasks_graded": len(graded),
        "tasks_succeeded": right,
        "task_success": right / len(graded) if graded else None,
        "task_success_ci95": wilson_interval(right, len(graded)) if graded else None,
    }
    if slo is not None:
        met = sum(1 for t in turns if slo.met(t))
        out["slo"] = {"ttft_s": slo.ttft_s, "tps": slo.tps}
        out["turns_meeting_slo"] = met
        out["slo_turn_share"] = met / len(turns) if turns else None
    return out
