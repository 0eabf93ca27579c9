"""The driver of multi-turn sessions (pytps.workload.sessions has their workload): each session's
turns in order, with the history the server actually answered, `--concurrency` sessions at once.
The runner hands a session run to run_sessions."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pytps._native import _core
from pytps.workload.datasets import estimate_tokens
from pytps.workload.sessions import SessionWorkload
from pytps.workload.synthetic import Prompt

if TYPE_CHECKING:
    from pytps.measure.records import RequestRecord
    from pytps.results.output import RunOutput
    from pytps.runner.config import RunConfig


class SessionHost(Protocol):
    """What the driver uses of the runner (pytps.runner.loop.Runner): its settings, the hook that
    sees each finished record before it is journaled, the early-stop flag, and one send."""

    cfg: RunConfig
    on_record: Callable[[RequestRecord], None] | None

    @property
    def stopping(self) -> bool: ...

    async def send_one(self, i: int, model: str, output: RunOutput, warmup: bool) -> None: ...


@dataclass
class _Turn:
    user: str
    answer: str
    tokens: int  # estimated tokens of the pair, for --max-context-tokens


class _Session:
    def __init__(self, number: int, warmup: bool) -> None:
        self.number = number
        self.warmup = warmup
        self.history: list[_Turn] = []
        self.turn = 0
        self.t_start_ns: int | None = None
        self.t_end_ns: int | None = None


async def run_sessions(
    runner: SessionHost, model: str, output: RunOutput, first: Callable[[], Awaitable[None]]
) -> None:
    """Runs every session, `--concurrency` of them at once. `first` sends request 0 alone (the
    runner's probe, which fails fast on a wrong key or path): it is session 0's first turn."""
    now_ns = _core.now_ns
    cfg = runner.cfg
    wl = cfg.workload
    assert isinstance(wl, SessionWorkload)
    plan = wl.plan
    total = plan.warmup + plan.sessions
    duration_s = cfg.plan.duration_s
    deadline: int | None = None
    next_index = 0
    next_session = 1
    tags: dict[int, tuple[int, int, int]] = {}  # index -> (session, turn, the session's turns)
    finished: dict[int, tuple[RequestRecord, str]] = {}  # index -> (record, answer text)

    def on_record(rec: RequestRecord) -> None:
        # Called before the record is journaled, and before the runner drops its text.
        session, turn, turns = tags.pop(rec.index)
        wl.forget(rec.index)
        rec.session, rec.turn = session, turn
        if not rec.ok:
            left = turns - turn - 1
            rec.session_end = f"turn {turn} failed ({rec.error}): the session's other {left} turns were not sent"
        finished[rec.index] = (rec, rec.text)

    def build(s: _Session) -> tuple[int, str]:
        nonlocal next_index
        i = next_index
        next_index += 1
        text, max_tokens, planned = wl.new_message(s.number, s.turn, i)
        new_tokens = estimate_tokens(text)
        if plan.max_context_tokens is not None:
            # Drop the oldest turns until the history and the new message fit, as chat apps do.
            while s.history and sum(t.tokens for t in s.history) + new_tokens > plan.max_context_tokens:
                s.history.pop(0)
        messages: list[dict[str, Any]] = []
        for t in s.history:
            messages += [{"role": "user", "content": t.user}, {"role": "assistant", "content": t.answer}]
        messages.append({"role": "user", "content": text})
        # Calibration learns only from prompts that are the new message alone.
        wl.set(i, Prompt(i, messages, None, None, max_tokens, planned if not s.history else None))
        tags[i] = (s.number, s.turn, wl.turns_of(s.number))
        return i, text

    def settle(s: _Session, i: int, text: str) -> bool:
        """The turn's outcome: True when the session goes on."""
        rec, answer = finished.pop(i)
        if s.t_start_ns is None:
            s.t_start_ns = rec.t_send_ns
        s.t_end_ns = rec.end_ns if rec.end_ns is not None else rec.t_done_ns
        if not rec.ok:
            return False
        s.history.append(_Turn(text, answer, estimate_tokens(text) + estimate_tokens(answer)))
        s.turn += 1
        return True

    runner.on_record = on_record
    try:
        # Session 0's first turn is the runner's probe, request 0.
        s0 = _Session(0, plan.warmup > 0)
        i0, text0 = build(s0)
        await first()

        async def run_one(s: _Session, resumed: tuple[int, str] | None) -> None:
            rng = random.Random(f"pytps:{cfg.seed}:think:{s.number}")
            turns = wl.turns_of(s.number)
            ok = settle(s, *resumed) if resumed else True
            while ok and s.turn < turns and not runner.stopping:
                if s.turn and (think := plan.think_time.sample(rng)) > 0:
                    await asyncio.sleep(think)
                i, text = build(s)
                await runner.send_one(i, model, output, s.warmup)
                ok = settle(s, i, text)
            if s.t_start_ns is not None and s.t_end_ns is not None and not s.warmup:
                output.summary.add_session(s.t_start_ns, s.t_end_ns)

        def take() -> _Session | None:
            nonlocal next_session, deadline
            if runner.stopping or next_session >= total:
                return None
            now = now_ns()
            if deadline is not None and now >= deadline:
                return None
            if deadline is None and duration_s and next_session >= plan.warmup:
                deadline = now + int(duration_s * 1e9)
            s = _Session(next_session, next_session < plan.warmup)
            next_session += 1
            return s

        async def worker(resume: bool) -> None:
            if resume:
                await run_one(s0, (i0, text0))
            while (s := take()) is not None:
                await run_one(s, None)

        await asyncio.gather(*(worker(k == 0) for k in range(cfg.plan.concurrency or 1)))
    finally:
        runner.on_record = None
