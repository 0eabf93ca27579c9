"""The agent driver (docs/agents.md): trajectory replay and live tool loops, with `agents`
concurrent agents (each at most one request in flight) or agents arriving at a rate.

Replay: each agent takes the next trajectory and works through it turn by turn: it sends the
recorded context, asks for the recorded output length, then waits the recorded tool time (or a
draw of `tool_time`) before the next turn. Live: each agent takes the next task and answers the
model's own tool calls with the mocked tools' results (parallel calls run concurrently), until
the model answers without a call or the step cap; the final answer is graded when the task has a
reference. Every turn goes through a Transport, so it is timed like any pytps request.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.grading.graders import grade_text, parse_reference
from pytps.measure.agents import AgentRow, AgentSlo, TurnRow, agent_summary
from pytps.measure.bodies import read_body
from pytps.measure.metrics import request_metrics
from pytps.measure.records import RequestRecord
from pytps.transport.base import RequestSpec, Transport
from pytps.workload.agent_requests import AGENT_APIS, TOOL_CHOICES, agent_request
from pytps.workload.agent_sources import agent_trajectories
from pytps.workload.agent_tools import DEFAULT_TOOLS, AgentTask, ToolSpec, check_arguments, load_tools, task_set
from pytps.workload.request_formats import auth_headers
from pytps.workload.sessions import ThinkTime
from pytps.workload.trajectories import AgentCall, AgentMessage, Trajectory

__all__ = ["AgentRun", "AgentSettings", "agent_work", "parse_tool_time", "run_agents"]

NS = 1_000_000_000


@dataclass(frozen=True)
class AgentSettings:
    """How agents load an endpoint. agents: concurrent agents (each takes the next trajectory or
    task when it finishes one); rate: agents arriving per second instead (seeded Poisson arrivals,
    no cap); tool_time: replay's tool waits drawn from this instead of the recorded ones;
    step_cap and max_tokens: a live loop's limits per task and per turn."""

    base_url: str
    api: str = "openai-chat"
    model: str = "pytps-emulator"
    agents: int = 8
    rate: float | None = None
    stream: bool = True
    tool_time: ThinkTime | None = None
    step_cap: int = 20
    max_tokens: int = 256
    api_key: str | None = None
    seed: int = 0
    slo: AgentSlo | None = None
    extra_body: dict[str, Any] | None = None
    transport: str = "native"
    previous_response_id: bool = False  # Responses replay: later turns send only their new items
    tool_choice: str | None = None  # auto, required or none, sent with the tools (None: the server's default)
    parallel_tool_calls: bool | None = None  # False: at most one call a turn (None: the server's default)

    def __post_init__(self) -> None:
        if self.previous_response_id and self.api != "openai-responses":
            raise ConfigError(f"--previous-response-id needs --api openai-responses, not {self.api!r}")
        if self.api not in AGENT_APIS:
            raise ConfigError(f"agents speak {', '.join(AGENT_APIS)}, not {self.api!r} (--api)")
        if self.rate is None and (not isinstance(self.agents, int) or self.agents < 1):
            raise ConfigError(f"--agents must be an integer >= 1, got {self.agents!r}")
        if self.rate is not None and not self.rate > 0:
            raise ConfigError(f"--agent-rate must be a positive number of agents per second, got {self.rate!r}")
        if self.tool_choice is not None and self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"--tool-choice must be one of {', '.join(TOOL_CHOICES)}, not {self.tool_choice!r}")
        if self.step_cap < 1 or self.max_tokens < 1:
            raise ConfigError("--step-cap and --max-tokens must be at least 1")


@dataclass
class AgentRun:
    """Every agent's rows, the summary (pytps.measure.agents.agent_summary) and the settings."""

    settings: AgentSettings
    agents: list[AgentRow] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    mode: str = "replay"

    def turn_rows(self) -> list[TurnRow]:
        return [t for a in self.agents for t in a.turns]


class _Sender:
    def __init__(self, s: AgentSettings, transport: Transport) -> None:
        self.s = s
        self.transport = transport
        self.headers = {"Content-Type": "application/json", **auth_headers(s.api, s.api_key)}
        self.next_index = 0

    def render(
        self,
        messages: Sequence[AgentMessage],
        tools: Sequence[dict[str, Any]],
        max_tokens: int,
        previous: str | None = None,
    ) -> RequestSpec:
        """The turn's request, ready to send (rendered ahead, during the previous tool wait, in
        replay); previous: the response id whose state the server holds (then messages are new ones)."""
        path, body = agent_request(
            self.s.api,
            self.s.model,
            messages,
            tools,
            max_tokens,
            stream=self.s.stream,
            extra_body=self.s.extra_body,
            previous_response_id=previous,
            tool_choice=self.s.tool_choice,
            parallel_tool_calls=self.s.parallel_tool_calls,
        )
        i = self.next_index
        self.next_index += 1
        return RequestSpec(
            index=i,
            path=path,
            body=json.dumps(body).encode(),
            headers=self.headers,
            dialect=self.s.api if self.s.stream else "json",
            max_tokens=max_tokens,
            stream=self.s.stream,
        )

    async def send_spec(self, spec: RequestSpec) -> RequestRecord:
        rec = await self.transport.send(spec)
        if not self.s.stream:
            read_body(rec, self.s.api)
        return rec

    async def send(
        self, messages: Sequence[AgentMessage], tools: Sequence[dict[str, Any]], max_tokens: int
    ) -> RequestRecord:
        return await self.send_spec(self.render(messages, tools, max_tokens))


def _turn_row(agent: int, trajectory: str, turn: int, rec: RequestRecord, api: str) -> TurnRow:
    m = request_metrics(rec)
    prompt, cached = rec.usage.get("prompt_tokens"), rec.usage.get("cached_tokens")
    if api == "anthropic" and prompt is not None:
        # Anthropic's input_tokens leave out the cache reads (cache_read_input_tokens): the
        # turn's input is both.
        prompt += cached or 0
    return TurnRow(
        agent=agent,
        trajectory=trajectory,
        turn=turn,
        response_id=rec.response_id,
        ok=rec.ok,
        error=rec.error,
        t_send_ns=rec.t_send_ns,
        t_end_ns=rec.end_ns if rec.end_ns is not None else rec.t_done_ns,
        ttft_s=m.ttft_s,
        e2e_s=m.e2e_s,
        decode_tps=m.decode_tps,
        output_tokens=m.output_tokens,
        input_tokens=prompt,
        cached_tokens=cached,
    )


async def _wait(seconds: float) -> float:
    """Sleeps, and returns the wait as measured (s)."""
    t0 = _core.now_ns()
    if seconds > 0:
        await asyncio.sleep(seconds)
    return (_core.now_ns() - t0) / NS


async def _replay(sender: _Sender, agent: int, t: Trajectory, rng: random.Random) -> AgentRow:
    s = sender.s
    row = AgentRow(agent, t.id)
    last = len(t.turns) - 1
    spec = sender.render(t.context(0), t.tools, t.turns[0].output_tokens)
    for k, turn in enumerate(t.turns):
        rec = await sender.send_spec(spec)
        tr = _turn_row(agent, t.id, k, rec, s.api)
        row.turns.append(tr)
        if not rec.ok:
            row.end = "error"
            return row
        if k < last:
            # The agent's tool wait starts when the turn ended; the next request is rendered
            # within it (the workload is known), so nothing but the send follows the wait.
            wait_s = s.tool_time.sample(rng) if s.tool_time is not None else turn.tool_s
            end_ns = tr.t_end_ns or _core.now_ns()
            if s.previous_response_id and rec.response_id:
                # The server holds turn k's conversation and its own reply (standing in for the
                # recorded one): only turn k+1's messages go, with the system prompt again.
                new = [m for m in t.context(0) if m.role == "system"] + list(t.turns[k + 1].messages)
                spec = sender.render(new, t.tools, t.turns[k + 1].output_tokens, rec.response_id)
            else:
                spec = sender.render(t.context(k + 1), t.tools, t.turns[k + 1].output_tokens)
            left = wait_s - (_core.now_ns() - end_ns) / NS
            if left > 0:
                await asyncio.sleep(left)
            tr.tool_s = (_core.now_ns() - end_ns) / NS
    row.finished = True
    row.end = "replayed"
    return row


async def _run_tool(tool: ToolSpec | None, call: AgentCall, rng: random.Random) -> str:
    if tool is None:
        return f"error: no tool named {call.name!r}"
    await asyncio.sleep(tool.latency.sample(rng))
    return tool.result(call)


async def _live(sender: _Sender, agent: int, task: AgentTask, rng: random.Random) -> AgentRow:
    s = sender.s
    row = AgentRow(agent, task.id)
    tools = {t.name: t for t in task.tools}
    specs = [t.spec() for t in task.tools]
    ctx: list[AgentMessage] = [AgentMessage("system", task.system)] if task.system else []
    ctx.append(AgentMessage("user", task.prompt))
    for step in range(s.step_cap):
        rec = await sender.send(ctx, specs, s.max_tokens)
        tr = _turn_row(agent, task.id, step, rec, s.api)
        row.turns.append(tr)
        if not rec.ok:
            row.end = "error"
            return row
        if not rec.tool_calls:
            row.finished = True
            row.end = "answer"
            if task.record is not None:
                ref = parse_reference(task.record, where=f"task {task.id}", item=task.id)
                if ref is not None:
                    row.success = bool(grade_text(ref, rec.text).correct)
            return row
        calls = tuple(
            AgentCall(c.id or f"call_{agent}_{step}_{n}", c.name, c.arguments) for n, c in enumerate(rec.tool_calls)
        )
        tr.calls = len(calls)
        tr.invalid_calls = sum(1 for c in calls if check_arguments(tools.get(c.name), c.arguments) is not None)
        ctx.append(AgentMessage("assistant", rec.text, calls))
        t0 = _core.now_ns()
        results = await asyncio.gather(*(_run_tool(tools.get(c.name), c, rng) for c in calls))
        tr.tool_s = (_core.now_ns() - t0) / NS
        ctx += [AgentMessage("tool", r, tool_call_id=c.id, name=c.name) for c, r in zip(calls, results, strict=True)]
    row.end = "step_cap"
    return row


def _make_transport(s: AgentSettings) -> Transport:
    conns = max(64, s.agents * 2)
    if s.transport == "native":
        from pytps.transport.native_transport import NativeTransport

        return NativeTransport(s.base_url, max_connections=conns)
    if s.transport == "asyncio":
        from pytps.transport.asyncio_transport import AsyncioTransport

        return AsyncioTransport(s.base_url)
    if s.transport == "httpx":
        from pytps.transport.httpx_transport import HttpxTransport

        return HttpxTransport(s.base_url)
    raise ConfigError(f"--transport {s.transport!r}: agents run on native, asyncio or httpx")


async def run_agents(
    settings: AgentSettings,
    work: Sequence[Trajectory] | Sequence[AgentTask],
    transport: Transport | None = None,
) -> AgentRun:
    """Runs every trajectory (replay) or task (live loop) once, and sums the run up."""
    if not work:
        raise ConfigError("agents: no trajectories or tasks to run")
    live = isinstance(work[0], AgentTask)
    if live:
        import jsonschema  # noqa: F401  (imported now, not inside the first agent's first turn)
    own = transport is None
    t = transport if transport is not None else _make_transport(settings)
    sender = _Sender(settings, t)
    run = AgentRun(settings, mode="live" if live else "replay")
    rows: list[AgentRow | None] = [None] * len(work)
    queue = list(range(len(work)))
    queue.reverse()

    async def one(i: int) -> None:
        rng = random.Random(f"pytps:{settings.seed}:agent:{i}")
        item = work[i]
        if isinstance(item, AgentTask):
            rows[i] = await _live(sender, i, item, rng)
        else:
            rows[i] = await _replay(sender, i, item, rng)

    async def worker() -> None:
        while queue:
            await one(queue.pop())

    try:
        if settings.rate is None:
            await asyncio.gather(*(worker() for _ in range(min(settings.agents, len(work)))))
        else:
            arrivals = random.Random(f"pytps:{settings.seed}:arrivals")
            started = []
            for i in range(len(work)):
                if i:
                    await asyncio.sleep(arrivals.expovariate(settings.rate))
                started.append(asyncio.ensure_future(one(i)))
            await asyncio.gather(*started)
    finally:
        if own:
            await t.aclose()
    run.agents = [r for r in rows if r is not None]
    run.summary = agent_summary(run.agents, settings.slo)
    return run


def agent_work(
    trajectories: str | None, live: str | None, tools: str | None = None, tool_time: ThinkTime | None = None
) -> list[Trajectory] | list[AgentTask]:
    """What the agents run: live tasks (`live`: tasks:NAMES:COUNT or prompts:COUNT, with the mocked
    `tools` file or the default search tool), or trajectories (`synthetic:...`, `example`, a file)."""
    if live:
        if trajectories is not None:
            raise ConfigError("--live runs tasks, not trajectories: leave the --agents workload out")
        return task_set(live, load_tools(tools) if tools else list(DEFAULT_TOOLS))
    return agent_trajectories(trajectories or "example", tool_time.a if tool_time else 0.0)


def parse_tool_time(text: str | None) -> ThinkTime | None:
    """--tool-time: S, S:SD, LO-HI or exp:MEAN seconds (None: the recorded tool times)."""
    return ThinkTime.parse(text) if text is not None else None
