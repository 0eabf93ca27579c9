"""How close pytps's numbers are to the truth, beside a plain httpx + json.loads client.

Against pytps.Emulator (native, its own thread, ground-truth send times) on 127.0.0.1:
  (a) one stream at 5,000 tok/s (ITL 200 us);
  (b) 32 streams at 1,000 tok/s each (ITL 1 ms).
For each, pytps (its default transport: the native engine for http://) and a
plain client (httpx aiter_lines, json.loads, time.monotonic_ns per line) run the same
workload one after the other. Printed: the error of TTFT (mean |client - truth|, truth being
the emulator's first-token send time minus its request receipt; split into the send lag,
emulator receipt minus the client's send stamp, and the read lag, the client's stamp of the
first token minus the emulator's write of it), of mean TPOT (relative), of
output throughput (relative), and the client's CPU time per token (its own threads: the
event loop's and pytps's engine thread; the emulator's thread is excluded).

Targets: (a) TTFT within 0.3 ms of truth; (b) TTFT within 5 ms and TPOT within 1%; pytps CPU
per token at most half the plain client's.

    python bench/bench_fidelity.py [--requests-a 10] [--requests-b 64] [--tokens 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import httpx
import numpy as np

import pytps
from pytps.config import make_config
from pytps.event_loop import event_loop_name, run_coroutine
from pytps.runner import Runner


async def plain_client(base_url: str, concurrency: int, requests: int, max_tokens: int) -> tuple[list, float]:
    """The way most Python benchmark clients do it."""
    out = []
    counter = iter(range(requests))

    async def worker(client: httpx.AsyncClient) -> None:
        for _ in counter:
            body = {"model": "m", "messages": [{"role": "user", "content": "hello " * 32}],
                    "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
            t_send = time.monotonic_ns()
            times = []
            rid = None
            usage = None
            async with client.stream("POST", "/v1/chat/completions", json=body) as resp:
                async for line in resp.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    data = line[6:]
                    if data == "[DONE]":
                        break
                    obj = json.loads(data)
                    rid = rid or obj.get("id")
                    if obj.get("usage"):
                        usage = obj["usage"]
                    choices = obj.get("choices") or []
                    if choices and choices[0].get("delta", {}).get("content"):
                        times.append(time.monotonic_ns())
            out.append({"id": rid, "t_send": t_send, "times": times,
                        "tokens": usage["completion_tokens"] if usage else len(times)})

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        cpu0 = time.thread_time()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        cpu = time.thread_time() - cpu0
    return out, cpu


def truth_figures(truth: dict, ids: list[str]) -> tuple[dict, dict]:
    ttft = {}
    tpot = {}
    for rid in ids:
        t = truth[rid]
        sent = t["sent_ns"]
        ttft[rid] = sent[0] - t["received_ns"]
        tpot[rid] = (sent[-1] - sent[0]) / max(1, t["output_tokens"] - int(t["tokens"][0]))
    return ttft, tpot


def compare(rows: list[tuple[str, int, int, int, int]], truth: dict, cpu_s: float) -> dict:
    """rows: (id, t_send, first_ns, last_ns, tokens) per request."""
    ids = [r[0] for r in rows]
    t_ttft, t_tpot = truth_figures(truth, ids)
    ttft_err = [abs((first - send) - t_ttft[rid]) for rid, send, first, _, _ in rows]
    # Where the error lies: the emulator receiving after our send stamp, our stamp after its write.
    send_lag = [int(truth[rid]["received_ns"]) - send for rid, send, _, _, _ in rows]
    read_lag = [first - int(truth[rid]["sent_ns"][0]) for rid, _, first, _, _ in rows]
    tpot_client = [(last - first) / max(1, tok - 1) for _, _, first, last, tok in rows]
    tpot_true = [t_tpot[rid] for rid in ids]
    tokens = sum(r[4] for r in rows)
    window_client = (max(r[3] for r in rows) - min(r[1] for r in rows)) / 1e9
    window_true = (max(int(truth[i]["sent_ns"][-1]) for i in ids) - min(int(truth[i]["received_ns"]) for i in ids)) / 1e9
    return {
        "ttft_err_mean_ms": float(np.mean(ttft_err)) / 1e6,
        "ttft_err_p99_ms": float(np.percentile(ttft_err, 99)) / 1e6,
        "send_lag_ms": float(np.mean(send_lag)) / 1e6,
        "read_lag_ms": float(np.mean(read_lag)) / 1e6,
        "tpot_err_rel": abs(np.mean(tpot_client) - np.mean(tpot_true)) / np.mean(tpot_true),
        "throughput_err_rel": abs(tokens / window_client - tokens / window_true) / (tokens / window_true),
        "cpu_us_per_token": cpu_s * 1e6 / tokens,
        "tokens": tokens,
    }


def run_case(name: str, itl_us: float, concurrency: int, requests: int, tokens: int) -> tuple[dict, dict]:
    with pytps.Emulator(ttft_ms=20, itl_us=itl_us, max_output_tokens=tokens) as emu:
        cfg = make_config(emu.base_url, concurrency=concurrency, requests=requests, output_tokens=tokens,
                          input_tokens=64, out=f"/tmp/pytps-bench-fidelity-{name}")
        runner = Runner(cfg, keep_records=True)
        cpu0 = time.thread_time()
        result = run_coroutine(runner.run())
        # This thread, plus the native engine's thread when the run used it (its CPU is known
        # once the transport closed); the emulator's threads are not counted.
        cpu_pytps = time.thread_time() - cpu0 + (result.metadata["client_cpu"]["engine_thread_s"] or 0.0)
        truth = {t["id"]: t for t in emu.wait_truth(len(result.records), timeout_s=10)}
        ours = compare([(r.response_id, r.t_send_ns, r.first_output_ns, r.last_output_ns,
                         r.usage.get("completion_tokens", 0)) for r in result.records if r.ok], truth, cpu_pytps)
        emu.truth(clear=True)
        plain, cpu_plain = run_coroutine(plain_client(emu.base_url, concurrency, requests, tokens))
        truth = {t["id"]: t for t in emu.wait_truth(len(plain), timeout_s=10)}
        theirs = compare([(p["id"], p["t_send"], p["times"][0], p["times"][-1], p["tokens"]) for p in plain],
                         truth, cpu_plain)
    return ours, theirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests-a", type=int, default=10)
    ap.add_argument("--requests-b", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=400)
    args = ap.parse_args()

    cases = [
        ("a", "(a) 1 stream @ 5,000 tok/s", 200.0, 1, args.requests_a, {"ttft_err_mean_ms": 0.3}),
        ("b", "(b) 32 streams @ 1,000 tok/s", 1000.0, 32, args.requests_b, {"ttft_err_mean_ms": 5.0,
                                                                            "tpot_err_rel": 0.01}),
    ]
    print(f"event loop: {event_loop_name()} (both clients)")
    print(f"{'case':<30}{'client':<8}{'TTFT err ms':>12}{'p99':>8}{'send lag':>10}{'read lag':>10}"
          f"{'TPOT err':>10}{'thru err':>10}{'CPU us/tok':>12}")
    for key, label, itl, conc, reqs, targets in cases:
        ours, theirs = run_case(key, itl, conc, reqs, args.tokens)
        for who, fig in (("pytps", ours), ("plain", theirs)):
            print(f"{label:<30}{who:<8}{fig['ttft_err_mean_ms']:>12.3f}{fig['ttft_err_p99_ms']:>8.2f}"
                  f"{fig['send_lag_ms']:>10.3f}{fig['read_lag_ms']:>10.3f}"
                  f"{fig['tpot_err_rel']:>9.2%}{fig['throughput_err_rel']:>9.2%}{fig['cpu_us_per_token']:>12.1f}")
        verdicts = [f"{k} {'MET' if ours[k] <= v else 'MISSED'} (target {v})" for k, v in targets.items()]
        ratio = ours["cpu_us_per_token"] / theirs["cpu_us_per_token"]
        verdicts.append(f"CPU ratio pytps/plain {ratio:.2f} {'MET' if ratio <= 0.5 else 'MISSED'} (target 0.5)")
        print("   " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
