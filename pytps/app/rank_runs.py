"""One round of `pytps rank` (docs/rank.md): the same items sent to every endpoint, each into a
normal results folder, interleaved in time so that drift falls on all of them alike.

- `simultaneous`: every endpoint's run at once, with the same concurrency (or rate schedule):
  item i goes to each at about the same moment.
- `blocks`: the items cut into blocks; in block k the endpoints take turns in a balanced order
  (ABBA…: forward in even blocks, reversed in odd ones), one endpoint at a time, so endpoints that
  share a host never compete for it while a drift still falls on all alike.
- `sequential`: one endpoint's whole run after the other's, as a matrix runs its cells. Not
  interleaved: offered so that the difference interleaving makes can be seen (and tested).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytps.errors import ConfigError
from pytps.results.output import RunOutput, RunResult
from pytps.runner.config import RunConfig, make_config
from pytps.runner.loop import Runner
from pytps.settings.commands import INTERLEAVES


@dataclass
class EndpointSpec:
    """One endpoint ranked: its name, URL (None: the built-in emulator with `emulator` settings),
    and its own run settings (model, api, prices, …: make_config's names)."""

    name: str
    url: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    emulator: dict[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return (urlsplit(self.url).hostname or "") if self.url else "127.0.0.1"


#: The keys `--endpoint name=URL,key=value,...` takes after the URL (make_config's names).
_ENDPOINT_FLAG_KEYS = ("model", "api", "api_key_env", "transport")


def parse_endpoint(text: str) -> EndpointSpec:
    """`NAME=URL[,model=M][,api=A][,api_key_env=VAR][,transport=T]` -> EndpointSpec."""
    name, eq, rest = text.partition("=")
    url, *pairs = rest.split(",")
    if not eq or not name.strip() or not url.strip():
        raise ConfigError(f"--endpoint {text!r}: write NAME=URL[,model=M], e.g. --endpoint a=http://127.0.0.1:8000")
    settings: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or key not in _ENDPOINT_FLAG_KEYS:
            raise ConfigError(
                f"--endpoint {text!r}: {pair!r} is not one of {', '.join(k + '=…' for k in _ENDPOINT_FLAG_KEYS)}"
            )
        settings[key] = value.strip()
    return EndpointSpec(name.strip(), url.strip(), settings)


def check_names(endpoints: list[EndpointSpec]) -> None:
    if len(endpoints) < 2:
        raise ConfigError("pytps rank needs at least two endpoints: --endpoint NAME=URL twice or more, or -c FILE")
    names = [e.name for e in endpoints]
    bad = [n for n in names if not n.replace("-", "").replace("_", "").replace(".", "").isalnum()]
    if bad:
        raise ConfigError(f"endpoint name {bad[0]!r}: use letters, digits, '-', '_' or '.' (it names a folder)")
    if len(set(names)) != len(names):
        raise ConfigError("two endpoints share a name: give each its own")


def choose_interleave(interleave: str, endpoints: list[EndpointSpec]) -> str:
    """auto: blocks when every endpoint is on one host (so they do not compete for it), else
    simultaneous."""
    if interleave not in INTERLEAVES:
        raise ConfigError(f"--interleave {interleave!r}: choose one of {', '.join(INTERLEAVES)}")
    if interleave != "auto":
        return interleave
    return "blocks" if len({e.host for e in endpoints}) == 1 else "simultaneous"


class BlockGate:
    """The turns of `blocks`: request index i belongs to block i // size; in block k the endpoints
    take turns in order (forward when k is even, reversed when odd), and a turn passes when the
    endpoint has finished every index of the block (or has stopped: its turns are skipped)."""

    def __init__(self, endpoints: int, total: int, size: int) -> None:
        self.size = size
        self.total = total
        blocks = (total + size - 1) // size
        forward, backward = list(range(endpoints)), list(reversed(range(endpoints)))
        self.turns = [(k, e) for k in range(blocks) for e in (forward if k % 2 == 0 else backward)]
        self.at = 0
        self.done: dict[tuple[int, int], int] = {}
        self.gone: set[int] = set()
        self.changed = asyncio.Event()

    def block_len(self, k: int) -> int:
        return min(self.size, self.total - k * self.size)

    def _advance(self) -> None:
        while self.at < len(self.turns):
            k, e = self.turns[self.at]
            if e not in self.gone and self.done.get((k, e), 0) < self.block_len(k):
                break
            self.at += 1
        self.changed.set()
        self.changed = asyncio.Event()

    async def turn(self, endpoint: int, index: int) -> None:
        want = (index // self.size, endpoint)
        while self.at < len(self.turns) and self.turns[self.at] != want:
            if endpoint in self.gone:
                return
            await self.changed.wait()

    def finished(self, endpoint: int, index: int) -> None:
        key = (index // self.size, endpoint)
        self.done[key] = self.done.get(key, 0) + 1
        self._advance()

    def leave(self, endpoint: int) -> None:
        self.gone.add(endpoint)
        self._advance()


class LockstepGate:
    """The pace of `simultaneous`: endpoint e starts request i only once every endpoint still
    running has started request i - 1, so item i goes to each at about the same moment and a
    burst of load (or a drift) falls on the same items everywhere, whatever each one's speed."""

    def __init__(self, endpoints: int) -> None:
        self.started = [-1] * endpoints
        self.gone: set[int] = set()
        self.changed = asyncio.Event()

    def _floor(self) -> int:
        live = [s for k, s in enumerate(self.started) if k not in self.gone]
        return min(live) if live else 1 << 62

    def _notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    async def turn(self, endpoint: int, index: int) -> None:
        while self._floor() < index - 1 and endpoint not in self.gone:
            await self.changed.wait()
        self.started[endpoint] = max(self.started[endpoint], index)
        self._notify()

    def finished(self, endpoint: int, index: int) -> None:
        pass

    def leave(self, endpoint: int) -> None:
        self.gone.add(endpoint)
        self._notify()


class GatedRunner(Runner):
    """A Runner whose every send (the probe included) waits for its endpoint's turn."""

    def __init__(self, cfg: RunConfig, gate: BlockGate | LockstepGate, slot: int) -> None:
        super().__init__(cfg)
        self._gate, self._slot = gate, slot

    async def _first_request(self, model: str, output: RunOutput) -> None:
        probe = self.share.probe_index
        await self._gate.turn(self._slot, probe)
        try:
            await super()._first_request(model, output)
        finally:
            self._gate.finished(self._slot, probe)

    async def send_one(
        self, i: int, model: str, output: RunOutput, warmup: bool, t_sched_ns: int | None = None
    ) -> None:
        await self._gate.turn(self._slot, i)
        try:
            await super().send_one(i, model, output, warmup, t_sched_ns)
        finally:
            self._gate.finished(self._slot, i)

    def request_stop(self, reason: str | None = None) -> None:
        super().request_stop(reason)
        self._gate.leave(self._slot)

    async def run(self) -> RunResult:
        try:
            return await super().run()
        finally:
            self._gate.leave(self._slot)


def round_configs(
    stack: ExitStack, endpoints: list[EndpointSpec], settings: Mapping[str, Any], folder: Path
) -> list[RunConfig]:
    """Every endpoint's RunConfig for a round into folder/NAME (emulators started on `stack`);
    each run is recorded in the store by the rank, not by itself."""
    from pytps.emulator import Emulator

    configs = []
    for e in endpoints:
        url = e.url
        if url is None:
            emu = {"keep_truth": False, **e.emulator}
            tasks = settings.get("tasks")
            if "answer_accuracy" in emu and "answers" not in emu and tasks:
                # The emulator knows the references of the items the rank sends (as `pytps run`'s).
                count = int(settings.get("requests") or 1000) + int(settings.get("warmup") or 0) + 1
                names = tasks if isinstance(tasks, str) else ",".join(tasks)
                emu["answers"] = f"tasks:{names}:{count}:{int(settings.get('seed') or 0)}"
            url = stack.enter_context(Emulator(**emu)).base_url
        cfg = make_config(url, **{**settings, **e.settings, "out": folder / e.name, "store": False})
        configs.append(cfg)
    return configs


async def run_round(configs: list[RunConfig], interleave: str, blocks: int) -> list[RunResult]:
    """The runs of one round, interleaved as asked; results in the endpoints' order."""
    if interleave == "simultaneous":
        pace = LockstepGate(len(configs))
        return list(await asyncio.gather(*(GatedRunner(cfg, pace, k).run() for k, cfg in enumerate(configs))))
    if interleave == "sequential":
        return [await Runner(cfg).run() for cfg in configs]
    plan = configs[0].plan
    if plan.mode != "concurrency" or plan.requests is None:
        raise ConfigError(
            "--interleave blocks takes --concurrency and --requests: a rate's schedule or a duration cannot "
            "pause for the other endpoints' turns (use --interleave simultaneous)"
        )
    total = plan.warmup + plan.requests
    size = max(1, -(-total // max(1, blocks)))
    gate = BlockGate(len(configs), total, size)
    print(f"pytps rank: {len(gate.turns)} turns of up to {size} requests (ABBA…)", file=sys.stderr, flush=True)
    return list(await asyncio.gather(*(GatedRunner(cfg, gate, k).run() for k, cfg in enumerate(configs))))
