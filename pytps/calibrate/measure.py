"""Running one calibration cell: pytps's own transports through the Runner, or another client
through its ``f(base_url, body, on_chunk)`` face, against the emulator process."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._native import _core
from .clients import Client, reset_clients
from .figures import ClientStream
from .ladder import Cell

PROMPT = "Count slowly. " * 8


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
) -> tuple[list[ClientStream], float | None]:
    """One cell with pytps's own client (the Runner, as `pytps run` measures): the streams and
    the client's CPU while it measured (event-loop thread + the transport's own thread)."""
    from ..config import make_config
    from ..event_loop import run_coroutine
    from ..runner import Progress, Runner
    from ..transport.select import make_transport

    out = tempfile.mkdtemp(prefix="pytps-calibrate-run-")
    try:
        cfg = make_config(
            base_url, model="m", concurrency=cell.concurrency, requests=cell.concurrency * rounds,
            output_tokens=str(output_tokens), input_tokens="32", transport=transport,
            kernel_timestamps=kernel_timestamps, out=out, timeout=60.0,
        )  # fmt: skip
        if transport == "native":
            from ..transport.native_transport import NativeTransport

            tr: Any = NativeTransport(
                cfg.base_url, max_connections=max(cell.concurrency, 100), read_timeout_s=60.0,
                kernel_timestamps=kernel_timestamps, test_read_delay_ns=read_delay_ns,
            )  # fmt: skip
        else:
            tr = make_transport(cfg)

        async def go() -> Any:
            try:
                return await Runner(cfg, Progress(), tr, keep_records=True).run()
            finally:
                await tr.aclose()

        result = run_coroutine(go())
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
    ]
    return streams, cpu


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
) -> tuple[list[ClientStream], float]:
    """One cell with another client: `concurrency` workers (threads for a sync client, tasks for
    an async one), each sending `rounds` requests; stamps taken when on_chunk is called. CPU is
    this whole process's while the cell ran (the emulator runs in another)."""
    now = _core.now_ns
    streams: list[ClientStream] = []
    lock = threading.Lock()

    def one_sync() -> None:
        stamps: list[int] = []
        t_send = now()
        ok = True
        try:
            client.fn(base_url, chat_body(output_tokens), lambda _text: stamps.append(now()))
        except Exception:
            ok = False
        with lock:
            streams.append(ClientStream(t_send, np.asarray(stamps, dtype=np.int64), ok=ok))

    async def one_async() -> None:
        stamps: list[int] = []
        t_send = now()
        ok = True
        try:
            await client.fn(base_url, chat_body(output_tokens), lambda _text: stamps.append(now()))
        except Exception:
            ok = False
        streams.append(ClientStream(t_send, np.asarray(stamps, dtype=np.int64), ok=ok))

    cpu0 = time.process_time()
    if client.is_async:
        from ..event_loop import run_coroutine

        async def worker() -> None:
            for _ in range(rounds):
                await one_async()

        async def all_workers() -> None:
            await asyncio.gather(*(worker() for _ in range(cell.concurrency)))

        reset_clients()
        run_coroutine(all_workers())
        reset_clients()
    else:
        with ThreadPoolExecutor(max_workers=cell.concurrency) as pool:
            list(pool.map(lambda _: [one_sync() for _ in range(rounds)], range(cell.concurrency)))
    return streams, time.process_time() - cpu0
