"""Native against httpx transport, in one run, against the emulator on the same 2-core machine.

The emulator runs as its own process (`pytps serve --truth-log`), so the CPU time this process
spends is the client's alone.

Cases (each transport runs the same workload, one after the other, against one emulator):
  (b) 32 streams at 1,000 tok/s each (ITL 1 ms, one token per event);
  (c) a ladder of aggregate token rates (--ladder): more streams at one token per event, then
      several tokens per event (as fast servers send them); the highest rate whose mean |TTFT
      error| stays within 1 ms, with no errors, is reported.

Per case and transport:
  TTFT error   mean and p99 of |client TTFT - true TTFT| over requests; the truth is the
               emulator's stamp of the first token's write minus the kernel's receive stamp of
               the request on the emulator's socket (truth's received_kernel_ns; its own
               received_ns when absent): the emulator's delay in reading a request is TTFT the
               client really saw. Target (b): mean within 0.5 ms; (c): within 1 ms.
  TPOT error   mean over requests of |client TPOT - true TPOT| / true TPOT, true TPOT being
               (last event written - first event written) / tokens after the first event.
               Target (b): within 0.2%.
  arrival-send p50 and p99 over every event of (client arrival stamp - emulator stamp of that
               event's write). Both are CLOCK_MONOTONIC on one host. On loopback it can be a
               little negative: a reader woken by the write may return before the writer's
               write() does.
  read floor   the CPU per event of the barest possible reader (C++ epoll + recv, measured here
               before each case at its connections and event rate): the kernel's share,
               which no client can go below. At one token per event it is the floor per token.
  (d) rate     poisson arrivals on an absolute schedule: the p50, p99 and max of (send stamp -
               scheduled instant) per transport. The native engine sends from its own timers;
               httpx from event-loop sleeps.
  CPU/token    the client's CPU per output token while it measured (results' client_cpu: the
               event loop's thread plus the native engine's thread); target <= 3 us. "+report"
               is the whole process around Runner.run(), writing the report included.

    python bench/bench_transport.py [--transports native,httpx] [--pin] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytps._native import _core
from pytps.config import make_config
from pytps.metrics import request_metrics
from pytps.event_loop import run_coroutine
from pytps.runner import Runner


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmulatorProcess:
    """`pytps serve` in a child process, optionally pinned to CPU 0; truth read from its log."""

    def __init__(self, *, itl_us: float, tokens_per_event: int, ttft_ms: float, pin: bool) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="pytps-bench-emu-"))
        self.truth_path = self.dir / "truth.jsonl"
        cmd = [sys.executable, "-m", "pytps", "serve", "--port", str(self.port), "--ttft-ms", str(ttft_ms),
               "--itl-us", str(itl_us), "--tokens-per-event", str(tokens_per_event),
               "--max-output-tokens", "100000", "--truth-log", str(self.truth_path)]
        if pin and shutil.which("taskset"):
            cmd = ["taskset", "-c", "0", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the emulator did not start: " + self.proc.stderr.read().decode()[-2000:])
                time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def truth(self, ids: set[str], timeout_s: float = 10.0) -> dict[str, dict]:
        """The truth records of these response ids (the log is written by a side thread)."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = {}
            with open(self.truth_path, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if rec["id"] in ids:
                        found[rec["id"]] = rec
            if len(found) == len(ids) or time.monotonic() > deadline:
                return found
            time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


@dataclass
class Figures:
    transport: str
    rate_tps: float  # achieved aggregate output token rate (tokens / measured window)
    events_per_s: float
    ttft_err_mean_ms: float
    ttft_err_p99_ms: float
    tpot_err_mean_pct: float
    arrival_send_p50_us: float
    arrival_send_p99_us: float
    loop_us_per_token: float  # the event loop's thread, while requests ran (Runner's client_cpu)
    engine_us_per_token: float  # the native engine's thread (0 for the others)
    process_us_per_token: float  # the whole process around Runner.run(), the report included
    reads_per_event: float  # native only (nan otherwise)
    true_stream_tps: float  # the emulator's achieved per-stream rate (1 / true TPOT), mean
    errors: int

    @property
    def cpu_us_per_token(self) -> float:
        """The client's CPU while it measured (docs/metrics.md, client CPU per token)."""
        return self.loop_us_per_token + self.engine_us_per_token


def measure(emu: EmulatorProcess, transport: str, streams: int, requests: int, tokens: int) -> Figures:
    cfg = make_config(emu.base_url, out=tempfile.mkdtemp(prefix="pytps-bench-run-"), requests=requests,
                      output_tokens=tokens, input_tokens=32, concurrency=streams, transport=transport,
                      model="m")
    runner = Runner(cfg, keep_records=True)
    u0, s0 = cpu()
    result = run_coroutine(runner.run())
    u1, s1 = cpu()
    client_cpu = result.metadata["client_cpu"]
    engine = getattr(runner.transport, "_engine", None)
    shutil.rmtree(cfg.out_dir, ignore_errors=True)
    ok = [r for r in result.records if r.ok]
    truth = emu.truth({r.response_id for r in ok})
    ttft_err, tpot_err, lags, true_tps = [], [], [], []
    for rec in ok:
        t = truth.get(rec.response_id)
        if t is None:
            continue
        sent = np.asarray(t["sent_ns"], dtype=np.int64)
        per_event = np.asarray(t["tokens"], dtype=np.int64)
        # From when the kernel had the request (when the emulator reports it): the emulator's own
        # delay in picking it up is part of the TTFT a client sees, not an error of the client.
        received = t["received_kernel_ns"] if t.get("received_kernel_ns") is not None else t["received_ns"]
        true_ttft = sent[0] - received
        ttft_err.append(abs((rec.first_output_ns - rec.t_send_ns) - true_ttft))
        true_tpot = (sent[-1] - sent[0]) / (per_event.sum() - per_event[0])
        true_tps.append(1e9 / true_tpot)
        m = request_metrics(rec)
        if m.tpot_s is not None:
            tpot_err.append(abs(m.tpot_s * 1e9 - true_tpot) / true_tpot)
        k = min(len(sent), len(rec.output_times_ns))
        lags.append(rec.output_times_ns[:k] - sent[:k])
    all_lags = np.concatenate(lags) if lags else np.zeros(1)
    tokens_total = result.summary["output_tokens_total"] or 1
    events_total = sum(len(r.output_times_ns) for r in ok)
    window = result.summary["measured_window_s"] or float("nan")
    return Figures(
        transport=transport,
        rate_tps=tokens_total / window,
        events_per_s=events_total / window,
        ttft_err_mean_ms=float(np.mean(ttft_err)) / 1e6 if ttft_err else float("nan"),
        ttft_err_p99_ms=float(np.percentile(ttft_err, 99, method="inverted_cdf")) / 1e6 if ttft_err else float("nan"),
        tpot_err_mean_pct=float(np.mean(tpot_err)) * 100 if tpot_err else float("nan"),
        arrival_send_p50_us=float(np.percentile(all_lags, 50, method="inverted_cdf")) / 1e3,
        arrival_send_p99_us=float(np.percentile(all_lags, 99, method="inverted_cdf")) / 1e3,
        loop_us_per_token=client_cpu["loop_thread_s"] / tokens_total * 1e6,
        engine_us_per_token=(client_cpu["engine_thread_s"] or 0.0) / tokens_total * 1e6,
        process_us_per_token=(u1 - u0 + s1 - s0) / tokens_total * 1e6,
        reads_per_event=engine.reads / max(1, events_total) if engine is not None else float("nan"),
        true_stream_tps=float(np.mean(true_tps)) if true_tps else float("nan"),
        errors=len(result.records) - len(ok),
    )


HEADER = (f"  {'transport':9s} {'tok/s':>9s} {'events/s':>9s} {'emu tok/s/stream':>16s} {'TTFT err mean/p99 ms':>21s} "
          f"{'TPOT err':>9s} {'arrival-send p50/p99 us':>24s} {'CPU us/token (loop+engine)':>27s} "
          f"{'+report':>8s} {'reads/event':>11s} {'errors':>6s}")


def row(f: Figures) -> str:
    return (f"  {f.transport:9s} {f.rate_tps:9,.0f} {f.events_per_s:9,.0f} {f.true_stream_tps:16,.0f} "
            f"{f.ttft_err_mean_ms:10.3f} / {f.ttft_err_p99_ms:8.3f} {f.tpot_err_mean_pct:8.3f}% "
            f"{f.arrival_send_p50_us:11.1f} / {f.arrival_send_p99_us:10.1f} "
            f"{f.cpu_us_per_token:13.2f} ({f.loop_us_per_token:5.2f}+{f.engine_us_per_token:5.2f}) "
            f"{f.process_us_per_token:8.2f} {f.reads_per_event:11.2f} {f.errors:>6d}")


def run_case(label: str, transports: list[str], *, streams: int, itl_us: float, tpe: int, requests: int,
             tokens: int, pin: bool) -> tuple[dict[str, Figures], float]:
    print(f"{label}: {streams} streams x {tpe * 1e6 / itl_us:,.0f} tok/s ({tpe} token(s) per event every "
          f"{itl_us:g} us), {requests} requests of {tokens} tokens", flush=True)
    floor = read_floor_us_per_event(streams, itl_us)
    print(f"  read floor here (bare C++ epoll + recv, {streams} connections, one message per {itl_us:g} us each): "
          f"{floor:.2f} us CPU per event = {floor / tpe:.2f} us per token")
    print(HEADER)
    emu = EmulatorProcess(itl_us=itl_us, tokens_per_event=tpe, ttft_ms=20, pin=pin)
    try:
        out = {}
        for tr in transports:
            out[tr] = measure(emu, tr, streams, requests, tokens)
            print(row(out[tr]), flush=True)
        return out, floor
    finally:
        emu.close()


def read_floor_us_per_event(connections: int, gap_us: float) -> float:
    """What the kernel charges the barest reader per event at this load (pytps clock's read floor)."""
    f = _core.measure_read_floor(connections=connections, gap_ns=int(gap_us * 1e3), duration_ns=1_000_000_000)
    return float(f["reader_cpu_ns_per_message"]) / 1e3


def rate_case(transports: list[str], *, rate_rps: float, requests: int, tokens: int) -> dict[str, dict]:
    """(d) rate mode: how late each transport sends against the absolute poisson schedule."""
    print(f"(d) rate mode: poisson {rate_rps:g} req/s, {requests} requests of {tokens} tokens (1 ms ITL)", flush=True)
    print(f"  {'transport':9s} {'schedule lag p50 / p99 / max us':>32s} {'sent early':>10s} {'errors':>6s}")
    emu = EmulatorProcess(itl_us=1000, tokens_per_event=1, ttft_ms=20, pin=False)
    out = {}
    try:
        for tr in transports:
            cfg = make_config(emu.base_url, out=tempfile.mkdtemp(prefix="pytps-bench-run-"), requests=requests,
                              output_tokens=tokens, input_tokens=32, rate=rate_rps, arrival="poisson",
                              transport=tr, model="m")
            result = run_coroutine(Runner(cfg, keep_records=True).run())
            shutil.rmtree(cfg.out_dir, ignore_errors=True)
            lag = np.array([r.t_send_ns - r.t_sched_ns for r in result.records if r.t_sched_ns is not None])
            fig = {"p50_us": float(np.percentile(lag, 50, method="inverted_cdf")) / 1e3,
                   "p99_us": float(np.percentile(lag, 99, method="inverted_cdf")) / 1e3,
                   "max_us": float(lag.max()) / 1e3, "early": int((lag < 0).sum()),
                   "errors": sum(1 for r in result.records if not r.ok)}
            out[tr] = fig
            print(f"  {tr:9s} {fig['p50_us']:11.1f} / {fig['p99_us']:8.1f} / {fig['max_us']:8.1f} "
                  f"{fig['early']:>10d} {fig['errors']:>6d}", flush=True)
    finally:
        emu.close()
    return out


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transports", default="native,httpx")
    ap.add_argument("--tokens", type=int, default=1000, help="output tokens per request")
    ap.add_argument("--rounds", type=int, default=3, help="requests per stream")
    ap.add_argument("--ladder", default="64x1,128x1,32x4,64x4,32x8,32x16,64x16",
                    help="rungs of (c) as STREAMSxTOKENS_PER_EVENT, each stream one event per ms")
    ap.add_argument("--rate", type=float, default=200.0, help="requests per second for (d)")
    ap.add_argument("--rate-requests", type=int, default=600, help="requests for (d)")
    ap.add_argument("--pin", action="store_true", help="pin the emulator to CPU 0 (taskset)")
    ap.add_argument("--quick", action="store_true", help="fewer tokens and rounds (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.tokens, args.rounds, args.rate_requests = 200, 1, 100
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    print(f"pytps bench_transport · {os.cpu_count()} CPUs · pid {os.getpid()} · emulator pinned: {args.pin}\n")

    b, b_floor = run_case("(b)", transports, streams=32, itl_us=1000, tpe=1, requests=32 * args.rounds,
                 tokens=args.tokens, pin=args.pin)
    print()
    rungs = [(int(r.split("x")[0]), int(r.split("x")[1])) for r in args.ladder.split(",") if r]
    ladder: list[tuple[int, int, dict[str, Figures]]] = []
    for streams, tpe in rungs:
        figs, _ = run_case(f"(c) rung {streams}x{tpe}", transports, streams=streams, itl_us=1000, tpe=tpe,
                        requests=streams * args.rounds, tokens=args.tokens * tpe, pin=args.pin)
        ladder.append((streams, tpe, figs))
        print()

    rate = rate_case(transports, rate_rps=args.rate, requests=args.rate_requests, tokens=100)
    print()

    print("Summary")
    for tr in transports:
        fb = b[tr]
        print(f"  {tr}:")
        print(f"    (b) TTFT err {fb.ttft_err_mean_ms:.3f} ms (<= 0.5: {verdict(fb.ttft_err_mean_ms <= 0.5)}), "
              f"TPOT err {fb.tpot_err_mean_pct:.3f}% (<= 0.2%: {verdict(fb.tpot_err_mean_pct <= 0.2)})")
        within = [(f[tr].rate_tps, s, t) for s, t, f in ladder if f[tr].ttft_err_mean_ms <= 1.0 and f[tr].errors == 0]
        best = max(within, default=(0.0, 0, 0))
        best_one = max((w for w in within if w[2] == 1), default=(0.0, 0, 0))
        print(f"    (c) highest aggregate rate with TTFT err <= 1 ms: {best[0]:,.0f} tok/s at {best[1]}x{best[2]} "
              f"(>= 200,000: {verdict(best[0] >= 200_000)}); at one token per event: {best_one[0]:,.0f} tok/s "
              f"({best_one[1]} streams)")
        met = [(f[tr].rate_tps, s, t, f[tr].cpu_us_per_token) for s, t, f in ladder if f[tr].cpu_us_per_token <= 3.0]
        print(f"    CPU per token (b): {fb.cpu_us_per_token:.2f} us (<= 3: {verdict(fb.cpu_us_per_token <= 3.0)}) = "
              f"{fb.cpu_us_per_token / b_floor:.2f}x the read floor of {b_floor:.2f} us per event")
        if met:
            print("      <= 3 us met at: " + ", ".join(f"{s}x{t} ({c:.2f} us, {r:,.0f} tok/s)" for r, s, t, c in met))
        print(f"    arrival - send (b): p50 {fb.arrival_send_p50_us:.1f} us, p99 {fb.arrival_send_p99_us:.1f} us")
        r = rate[tr]
        print(f"    (d) schedule lag: p50 {r['p50_us']:.1f} us, p99 {r['p99_us']:.1f} us, {r['early']} sent early")
    if "native" in transports and "httpx" in transports:
        n, h = b["native"], b["httpx"]
        print(f"  native/httpx in (b): TTFT err {n.ttft_err_mean_ms / h.ttft_err_mean_ms:.2f}, "
              f"CPU per token {n.cpu_us_per_token / h.cpu_us_per_token:.2f}")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
