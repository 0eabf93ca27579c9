"""Native against the asyncio and httpx transports, in one run, against the emulator on the same
2-core machine.

The client error per transport is `pytps calibrate`'s (docs/calibrate.md): this script calls it
on its own cells and prints its targets. The emulator runs as its own process, so the CPU time
this process spends is the client's alone.

Cases:
  (b) 32 streams at 1,000 tok/s each (ITL 1 ms, one token per event);
  (c) a ladder of aggregate token rates (--ladder): more streams at one token per event, then
      several tokens per event (as fast servers send them), each stream one event per ms; the
      highest aggregate rate whose mean |TTFT error| stays within 1 ms, with no errors;
  (d) rate mode (not part of calibrate): poisson arrivals on an absolute schedule, the p50, p99
      and max of (send stamp - scheduled instant) per transport. The native engine sends from
      its own timers; httpx from event-loop sleeps.
Targets: (b) TTFT error mean within 0.5 ms, TPOT error within 0.2%; CPU per token <= 3 us.

    python bench/bench_transport.py [--transports native,httpx] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from typing import Any

import numpy as np

from pytps.calibrate.emulator_process import EmulatorProcess
from pytps.calibrate.envelope import THRESHOLDS
from pytps.calibrate.ladder import Ladder
from pytps.calibrate.output import print_report
from pytps.calibrate.session import Settings, Who, run_calibration
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner


def calibrate_cells(transports: list[str], rungs: list[tuple[int, int]], stream_s: float) -> list[dict[str, Any]]:
    """Each rung (streams, tokens per event) at one event per ms per stream, every transport."""
    who = [Who(t, transport=t) for t in transports]
    cells: list[dict[str, Any]] = []
    for streams, tpe in rungs:
        rate = 1000.0 * tpe
        ladder = Ladder((rate,), (streams,), stream_s=stream_s, tokens_per_event={rate: (tpe,)})
        data = run_calibration(Settings(ladder, who, dict(THRESHOLDS)))
        print_report(data)
        cells += data["cells"]
    return cells


def rate_case(transports: list[str], *, rate_rps: float, requests: int, tokens: int) -> dict[str, dict]:
    """(d) rate mode: how late each transport sends against the absolute poisson schedule."""
    print(f"(d) rate mode: poisson {rate_rps:g} req/s, {requests} requests of {tokens} tokens (1 ms ITL)", flush=True)
    print(f"  {'transport':9s} {'schedule lag p50 / p99 / max us':>32s} {'sent early':>10s} {'errors':>6s}")
    out = {}
    with EmulatorProcess(itl_us=1000, tokens_per_event=1, max_output_tokens=tokens) as emu:
        for tr in transports:
            cfg = make_config(emu.base_url, out=tempfile.mkdtemp(prefix="pytps-bench-run-"), requests=requests,
                              output_tokens=tokens, input_tokens=32, rate=rate_rps, arrival="poisson",
                              transport=tr, model="m")  # fmt: skip
            result = run_coroutine(Runner(cfg, keep_records=True).run())
            shutil.rmtree(cfg.out_dir, ignore_errors=True)
            lag = np.array([r.t_send_ns - r.t_sched_ns for r in result.records if r.t_sched_ns is not None])
            fig = {"p50_us": float(np.percentile(lag, 50, method="inverted_cdf")) / 1e3,
                   "p99_us": float(np.percentile(lag, 99, method="inverted_cdf")) / 1e3,
                   "max_us": float(lag.max()) / 1e3, "early": int((lag < 0).sum()),
                   "errors": sum(1 for r in result.records if not r.ok)}  # fmt: skip
            out[tr] = fig
            print(f"  {tr:9s} {fig['p50_us']:11.1f} / {fig['p99_us']:8.1f} / {fig['max_us']:8.1f} "
                  f"{fig['early']:>10d} {fig['errors']:>6d}", flush=True)  # fmt: skip
    return out


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transports", default="native,asyncio,httpx")
    ap.add_argument("--stream-s", type=float, default=1.0, help="seconds each stream lasts")
    ap.add_argument("--ladder", default="64x1,128x1,32x4,64x4,32x8,32x16,64x16",
                    help="rungs of (c) as STREAMSxTOKENS_PER_EVENT, each stream one event per ms")  # fmt: skip
    ap.add_argument("--rate", type=float, default=200.0, help="requests per second for (d)")
    ap.add_argument("--rate-requests", type=int, default=600, help="requests for (d)")
    ap.add_argument("--quick", action="store_true", help="shorter streams and fewer requests (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.stream_s, args.rate_requests = 0.3, 100
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    print(f"pytps bench_transport · {os.cpu_count()} CPUs · pid {os.getpid()}\n")
    print("(b) 32 streams x 1,000 tok/s")
    b = {c["client"]: c["figures"] for c in calibrate_cells(transports, [(32, 1)], args.stream_s)}
    print("(c) ladder")
    rungs = [(int(r.split("x")[0]), int(r.split("x")[1])) for r in args.ladder.split(",") if r]
    ladder = calibrate_cells(transports, rungs, args.stream_s)
    rate = rate_case(transports, rate_rps=args.rate, requests=args.rate_requests, tokens=100)
    print("\nSummary")
    for tr in transports:
        fb = b.get(tr)
        if fb is None:
            continue
        print(f"  {tr}:")
        print(f"    (b) TTFT err {fb['ttft_error_mean_ms']:.3f} ms (<= 0.5: {verdict(fb['ttft_error_mean_ms'] <= 0.5)}), "
              f"TPOT err {fb['tpot_error_pct']:.3f}% (<= 0.2%: {verdict(fb['tpot_error_pct'] <= 0.2)}), "
              f"CPU {fb['cpu_us_per_token']:.2f} us/token (<= 3: {verdict(fb['cpu_us_per_token'] <= 3.0)}), "
              f"read floor {fb['read_floor_us_per_event'] or float('nan'):.2f} us/event")  # fmt: skip
        within = [
            (c["rate_tps"] * c["concurrency"], c["concurrency"], c["tokens_per_event"])
            for c in ladder
            if c["client"] == tr and c["figures"]["ttft_error_mean_ms"] <= 1.0 and c["figures"]["failed"] == 0
        ]
        best = max(within, default=(0.0, 0, 0))
        print(f"    (c) highest aggregate rate with TTFT err <= 1 ms: {best[0]:,.0f} tok/s at {best[1]}x{best[2]}")
        r = rate[tr]
        print(f"    (d) schedule lag: p50 {r['p50_us']:.1f} us, p99 {r['p99_us']:.1f} us, {r['early']} sent early")


if __name__ == "__main__":
    main()
