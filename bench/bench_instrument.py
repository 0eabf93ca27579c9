"""What pytps.instrument costs the application: the OpenAI SDK streaming from the emulator with
and without instrumentation, in interleaved rounds (A B, B A, A B, ...) within one run.

The emulator runs as its own process (`pytps serve`), so this process's CPU time is the client's
alone: the SDK, httpx(2), and, in B rounds, pytps's stamping, recording and record hand-over.
Each round streams the same requests; the figure is the CPU per received chunk (one SSE event
per read at the chosen ITL: the emulator writes each event on its own and the client is idle
between them), B minus A per round, reported as the median over rounds with its spread
(p10-p90); the order alternates per round so that a drift in load favours neither side.
Target (issue 14): at most 2 us per chunk.

The machine's load average is printed before and after: with other work on the machine the
spread widens, the median stays the comparison of like with like.

    python bench/bench_instrument.py [--rounds 20] [--requests 5] [--tokens 200] [--package httpx2] [--layer sdk|http]

--control runs A/A (both sides bare): the difference it reports is the method's own bias.
--layer http times the HTTP client alone (iter_bytes): the same instrumentation, without the
SDK's ~100 us per chunk of parsing, whose run-to-run spread hides a 2 us difference.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from typing import Any

import numpy as np


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the emulator did not listen on port {port}")


def per_chunk_work_us(n: int = 200_000) -> tuple[float, float]:
    """pytps's own work per chunk, without sockets: a stamping read (now_ns, one attribute set) and
    the body wrapper's step (one generator layer, StreamRecorder.feed of a one-token SSE event).
    Returns (CPU us per chunk with it, without it: the bare generator over the same chunks)."""
    from pytps import StreamRecorder, now_ns

    event = b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" word"}}]}\n\n'
    chunks = [event] * n

    class Net:
        last_read_ns = 0

    net = Net()

    def bare(src: list[bytes]) -> Any:
        yield from src

    def stamped(src: list[bytes]) -> Any:
        for part in src:
            net.last_read_ns = now_ns()
            yield part

    def wrapped(src: Any, feed: Any) -> Any:
        for part in src:
            feed(part, net.last_read_ns)
            yield part

    t0 = time.process_time()
    for _ in bare(chunks):
        pass
    t_bare = time.process_time() - t0
    recorder = StreamRecorder("openai-chat")
    t0 = time.process_time()
    for _ in wrapped(stamped(chunks), recorder.feed):
        pass
    t_with = time.process_time() - t0
    return t_with / n * 1e6, t_bare / n * 1e6


def per_call_work_us(tokens: int, n: int = 2000) -> float:
    """pytps's own work per HTTP attempt, without sockets: opening its record, reading the response
    head, and closing it (StreamRecorder read-outs, the record handed to a collector), for a
    stream of `tokens` one-token events. CPU us per attempt."""
    from types import SimpleNamespace

    import pytps
    from pytps.embed.instrument import _Attempt
    from pytps.transport.stamping import SyncStampingStream

    event = b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" w"}}]}\n\n'
    request = SimpleNamespace(headers={}, url=SimpleNamespace(path="/v1/chat/completions"), method="POST")
    net = SyncStampingStream(None, 1)
    response = SimpleNamespace(
        extensions={"network_stream": net}, status_code=200, headers={"content-type": "text/event-stream"}
    )
    collector = pytps.Collector(keep=False)
    chunks = [event] * tokens + [b"data: [DONE]\n\n"]
    t_feed = 0.0
    t0 = time.process_time()
    for _ in range(n):
        attempt = _Attempt(request, None, collector)
        attempt.response(response)
        t1 = time.process_time()
        feed = attempt.recorder.feed
        for part in chunks:
            feed(part, 1)
        t_feed += time.process_time() - t1
        attempt.finish(None, complete=True)
    return (time.process_time() - t0 - t_feed) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--requests", type=int, default=5, help="streams per round and side")
    ap.add_argument("--tokens", type=int, default=200, help="output tokens per stream")
    ap.add_argument("--itl-us", type=int, default=300, help="the emulator's gap between events")
    ap.add_argument("--package", choices=("httpx", "httpx2"), default="httpx2")
    ap.add_argument(
        "--layer", choices=("sdk", "http"), default="sdk", help="through the OpenAI SDK, or the HTTP client alone"
    )
    ap.add_argument("--control", action="store_true", help="A/A: both sides bare, the harness's own bias")
    args = ap.parse_args()

    import importlib

    import openai

    import pytps

    pkg = importlib.import_module(args.package)
    port = _free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", str(port), "--ttft-ms", "1", "--itl-us", str(args.itl_us)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port)
        base = f"http://127.0.0.1:{port}/v1"
        timed_http = pytps.instrument(pkg.Client())
        if args.layer == "sdk":
            bare: Any = openai.OpenAI(base_url=base, api_key="k", http_client=pkg.Client())
            timed: Any = openai.OpenAI(base_url=base, api_key="k", http_client=timed_http)
        else:
            bare, timed = pkg.Client(), timed_http
        counter = timed
        if args.control:  # A/A: the harness's own bias, both sides bare
            timed = (
                openai.OpenAI(base_url=base, api_key="k", http_client=pkg.Client())
                if args.layer == "sdk"
                else pkg.Client()
            )
        messages = [{"role": "user", "content": "hello"}]

        body = {"model": "m", "messages": messages, "stream": True, "max_tokens": args.tokens}

        def stream_all(client: Any) -> tuple[float, str]:
            text: list[Any] = []
            cpu0 = time.process_time()
            for _ in range(args.requests):
                if isinstance(client, openai.OpenAI):
                    stream = client.chat.completions.create(
                        model="m", messages=messages, stream=True, max_tokens=args.tokens
                    )
                    text.extend(ch.choices[0].delta.content or "" for ch in stream if ch.choices)
                else:  # the HTTP client alone, bytes as they come: the overhead without the SDK's noise
                    with client.stream("POST", base + "/chat/completions", json=body) as r:
                        text.extend(r.iter_bytes())
            out = b"".join(text) if text and isinstance(text[0], bytes) else "".join(text)
            return time.process_time() - cpu0, str(out) if isinstance(out, bytes) else out

        for client in (bare, timed, counter):  # warm-up: imports, connections, the SDK's model classes
            stream_all(client)
        events_per_round = sum(r.events for r in timed_http.collector.records[-args.requests :])
        timed_http.collector.clear()
        load_before = os.getloadavg()
        a_cpu, b_cpu, chunks = [], [], []
        for round_no in range(args.rounds):
            # A B, then B A in the next round: a drift in the machine's load favours neither side.
            n_before = len(timed_http.collector)
            if round_no % 2 == 0:
                cpu_a, text_a = stream_all(bare)
                cpu_b, text_b = stream_all(timed)
            else:
                cpu_b, text_b = stream_all(timed)
                cpu_a, text_a = stream_all(bare)
            if args.layer == "sdk":
                assert text_a == text_b, "the SDK saw different text with instrumentation"
            records = timed_http.collector.records[n_before:]
            # SSE events framed per round (the same bytes reach the bare SDK): one per read here.
            chunks.append(events_per_round if args.control else sum(r.events for r in records))
            a_cpu.append(cpu_a)
            b_cpu.append(cpu_b)
        load_after = os.getloadavg()
    finally:
        serve.terminate()
        serve.wait()

    n = np.asarray(chunks, dtype=float)
    per_a = np.asarray(a_cpu) / n * 1e6
    per_b = np.asarray(b_cpu) / n * 1e6
    diff = per_b - per_a
    records = timed_http.collector.records
    reads_ok = all(r.ok for r in records)
    if args.control:
        print("CONTROL (A/A): both sides bare; the difference is the harness's own bias and noise")
    layer = f"OpenAI SDK {openai.__version__} on {args.package}" if args.layer == "sdk" else f"{args.package} alone"
    print(
        f"pytps.instrument overhead, {layer}, {args.rounds} rounds x "
        f"{args.requests} streams x {args.tokens} tokens, ITL {args.itl_us} us, {int(n.mean())} chunks per round"
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
    print(
        f"bare         CPU per chunk: median {np.median(per_a):.2f} us (p10 {np.percentile(per_a, 10):.2f}, "
        f"p90 {np.percentile(per_a, 90):.2f})"
    )
    print(
        f"instrumented CPU per chunk: median {np.median(per_b):.2f} us (p10 {np.percentile(per_b, 10):.2f}, "
        f"p90 {np.percentile(per_b, 90):.2f})"
    )
    print(
        f"difference per round (B - A): median {np.median(diff):+.2f} us per chunk, "
        f"p10 {np.percentile(diff, 10):+.2f}, p90 {np.percentile(diff, 90):+.2f}; "
        f"target <= 2 us: {'met' if np.median(diff) <= 2.0 else 'NOT met'}"
    )
    print(f"records: {len(records)}, all ok: {reads_ok}")
    call_us = per_call_work_us(args.tokens)
    print(
        f"pytps's own work per HTTP attempt, no sockets (record, head, read-outs, hand-over): {call_us:.1f} us, "
        f"{call_us / (args.tokens + 3):.2f} us per chunk at {args.tokens} tokens"
    )
    with_us, bare_us = per_chunk_work_us()
    print(
        f"pytps's own work per chunk, no sockets (stamp + wrapper + StreamRecorder.feed): {with_us - bare_us:.2f} us "
        f"({with_us:.2f} us against a bare generator's {bare_us:.2f} us)"
    )


if __name__ == "__main__":
    main()
