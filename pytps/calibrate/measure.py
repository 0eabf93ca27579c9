"""Running one calibration cell: pytps's own transports through the Runner, or another client
through its ``f(base_url, body, on_chunk)`` face, against the emulator process."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from pytps._native import _core
from pytps.calibrate.clients import Client, close_async_clients, reset_clients
from pytps.calibrate.figures import ClientStream
from pytps.calibrate.ladder import Cell

PROMPT = "Count slowly. " * 8
#: A warm-up request's output: one event, told apart from measured requests in the truth by it.
WARMUP_TOKENS = 1


def read_floor_us_per_event(cell: Cell, duration_s: float) -> float | None:
    """The CPU the barest reader (C++ epoll + recv) pays per event at this cell's load (pytps
    clock's read floor); None where it cannot be measured (too many connections for the host)."""
    try:
        f = _core.measure_read_floor(
            connections=cell.concurrency, gap_ns=int(cell.itl_us * 1e3), duration_ns=int(duration_s * 1e9)
        )
    except (RuntimeError, ValueError, OSError):
        return None
    per = f.get("reader_cpu_ns_per_message")
    return float(per) / 1e3 if per else None


def measure_transport(
    base_url: str,
    transport: str,
    cell: Cell,
    output_tokens: int,
    *,
    rounds: int = 1,
    kernel_timestamps: bool = False,
    read_delay_ns: int = 0,
) -> tuple[list[ClientStream], float, int]:
    """One cell with pytps's own client (the Runner, as `pytps run` measures): the measured
    streams, the client's CPU (event-loop thread + the transport's own thread) and how many
    requests were sent. The Runner's first request goes alone (its probe): here it is a warm-up
    of one token (ShortWarmup), so that the `concurrency` measured requests all run together
    and the CPU is theirs."""
    from pytps.runner.config import make_config
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Progress, Runner
    from pytps.transport.registry import make_transport

    out = tempfile.mkdtemp(prefix="pytps-calibrate-run-")
    try:
        cfg = make_config(
            base_url, model="m", concurrency=cell.concurrency, requests=cell.concurrency * rounds,
            output_tokens=str(output_tokens), input_tokens="32", transport=transport,
            kernel_timestamps=kernel_timestamps, out=out, timeout=60.0, warmup=1,
            store=False,  # a cell of the calibration, not a run: `pytps calibrate` records its own row
        )  # fmt: skip
        if transport == "native":
            from pytps.transport.base import Timeouts
            from pytps.transport.native_transport import NativeTransport

            tr: Any = NativeTransport(
                cfg.base_url, max_connections=max(cell.concurrency, 100), timeouts=Timeouts(read_s=60.0),
                kernel_timestamps=kernel_timestamps, test_read_delay_ns=read_delay_ns,
            )  # fmt: skip
        else:
            tr = make_transport(cfg)

        async def go() -> Any:
            try:
                return await Runner(cfg, Progress(), ShortWarmup(tr), keep_records=True).run()
            finally:
                await tr.aclose()

        result = run_coroutine(go())
        if result.interrupted:
            raise KeyboardInterrupt  # a Ctrl-C the Runner caught: the cell is not whole
        cpu = result.metadata["client_cpu"]["loop_thread_s"] + (tr.thread_cpu_s or 0.0)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    streams = [
        ClientStream(
            t_send_ns=r.t_send_ns,
            stamps_ns=r.output_times_ns,
            response_id=r.response_id,
            kernel_ns=r.output_kernel_times_ns if len(r.output_kernel_times_ns) else None,
            ok=r.ok,
        )
        for r in result.records
        if not r.warmup
    ]
    return streams, cpu, len(result.records)


class ShortWarmup:
    """A transport that sends the warm-up request with max_tokens 1, and is otherwise the one it
    wraps (the Runner sees its name, send, aclose...)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send(self, spec: Any) -> Any:
        if spec.warmup:
            body = json.loads(spec.body)
            for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
                if key in body:
                    body[key] = WARMUP_TOKENS
            spec = dataclasses.replace(spec, body=json.dumps(body).encode(), max_tokens=WARMUP_TOKENS)
        return await self._inner.send(spec)


def chat_body(output_tokens: int) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": output_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def measure_client(
    base_url: str, client: Client, cell: Cell, output_tokens: int, *, rounds: int = 1
) -> tuple[list[ClientStream], float, int]:
    """One cell with another client: `concurrency` workers (threads for a sync client, tasks for
    an async one), each sending one warm-up request (one event: imports, the SDK's client and its
    connections are made before anything is timed) and then `rounds` measured ones; stamps taken
    when on_chunk is called. CPU is this whole process's over the measured requests (the emulator
    runs in another). Returns the measured streams, the CPU and how many requests were sent."""
    now = _core.now_ns
    streams: list[ClientStream] = []
    lock = threading.Lock()
    warm_body = chat_body(WARMUP_TOKENS)

    def one_sync(measured: bool) -> None:
        stamps: list[int] = []
        t_send = now()
        ok = True
        try:
            client.fn(base_url, chat_body(output_tokens) if measured else warm_body, lambda _t: stamps.append(now()))
        except Exception:
            ok = False
        if measured:
            with lock:
                streams.append(ClientStream(t_send, np.asarray(stamps, dtype=np.int64), ok=ok))

    async def one_async(measured: bool) -> None:
        stamps: list[int] = []
        t_send = now()
        ok = True
        try:
            body = chat_body(output_tokens) if measured else warm_body
            await client.fn(base_url, body, lambda _t: stamps.append(now()))
        except Exception:
            ok = False
        if measured:
            streams.append(ClientStream(t_send, np.asarray(stamps, dtype=np.int64), ok=ok))

    def all_rounds() -> None:
        for _ in range(rounds):
            one_sync(True)

    cpu_s = 0.0
    if client.is_async:
        from pytps.runner.event_loop import run_coroutine

        async def all_workers() -> float:
            await asyncio.gather(*(one_async(False) for _ in range(cell.concurrency)))
            cpu0 = time.process_time()

            async def worker() -> None:
                for _ in range(rounds):
                    await one_async(True)

            await asyncio.gather(*(worker() for _ in range(cell.concurrency)))
            cpu = time.process_time() - cpu0
            await close_async_clients()
            return cpu

        reset_clients()  # async SDK clients belong to one event loop: this cell's
        try:
            cpu_s = run_coroutine(all_workers())
        finally:
            reset_clients()
    else:
        with ThreadPoolExecutor(max_workers=cell.concurrency) as pool:
            list(pool.map(lambda _: one_sync(False), range(cell.concurrency)))
            cpu0 = time.process_time()
            list(pool.map(lambda _: all_rounds(), range(cell.concurrency)))
            cpu_s = time.process_time() - cpu0
    return streams, cpu_s, cell.concurrency * (rounds + 1)
