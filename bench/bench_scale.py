"""What scale-out buys on this host: pytps.scale with 1 and 2 worker processes against
pytps.Emulator (its own C++ thread in this process) on 127.0.0.1.

  (a) rate mode: the highest request rate held with p99 schedule lag under 1 ms (Poisson
      arrivals, 4-token answers, every scheduled request sent, no errors);
  (b) concurrency mode: the highest aggregate output token rate held with TTFT within 1 ms of
      the emulator's truth (mean |client TTFT - true TTFT|; 1,000 tok/s per stream, the
      concurrency doubled until the error passes 1 ms, then bisected).

Each search doubles the load from a start until the criterion fails, then bisects BISECT steps
between the last pass and the first failure. The emulator's thread needs a core of its own at
these loads, so on a 2-core host one core is left for the workers, and a second worker competes
with the first rather than adding a core: the figures say what one host of this size does, and
a host with more cores than workers + 1 is the setting where N workers scale.

    python bench/bench_scale.py [--seconds 2] [--bisect 2] [--workers 1,2]   (0: the plain in-process
                                                                            Runner, as a baseline)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pytps
from pytps.results.folder import load_journal
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.results.output import RunResult
from pytps.runner.loop import Runner
from pytps.scale import ScaledRun, ScaleOptions

LAG_LIMIT_S = 1e-3
TTFT_LIMIT_NS = 1_000_000


def busy_share() -> float:
    """The host's CPU busy share over the last second (other processes included)."""
    import time

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]

    t0, i0 = sample()
    time.sleep(1.0)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def measure(base_url: str, workers: int, settings: dict[str, Any]) -> RunResult:
    """A run with `workers` worker processes; 0: the plain Runner in this process (a baseline)."""
    if workers == 0:
        return run_coroutine(Runner(make_config(base_url, **settings)).run())
    return ScaledRun(base_url, settings, ScaleOptions(workers=workers)).run()


def rate_trial(workers: int, rate: float, seconds: float) -> tuple[bool, str]:
    with pytps.Emulator(ttft_ms=1, itl_us=100, keep_truth=False) as emu, tempfile.TemporaryDirectory() as tmp:
        settings = {
            "rate": rate,
            "duration": seconds,
            "warmup": 2 * max(1, workers),
            "output_tokens": 4,
            "input_tokens": 16,
            "out": Path(tmp) / "out",
        }
        result = measure(emu.base_url, workers, settings)
    s = result.summary
    lag = s["schedule_lag_s"]["p99"]
    sent = s["requests_total"]
    expected = rate * seconds
    ok = lag is not None and lag < LAG_LIMIT_S and s["error_rate"] == 0 and sent >= 0.9 * expected
    lag_ms = lag * 1e3 if lag is not None else float("nan")
    return ok, f"{sent} requests, p99 lag {lag_ms:.3f} ms, errors {s['error_rate']:.1%}"


def token_trial(workers: int, concurrency: int, seconds: float) -> tuple[bool, str, float]:
    tokens = 256  # 1,000 tok/s per stream: ~0.26 s a request
    requests = max(2 * concurrency, int(concurrency * seconds / 0.26))
    with pytps.Emulator(ttft_ms=5, itl_us=1000, keep_truth=True) as emu, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        settings = {
            "concurrency": concurrency,
            "requests": requests,
            "warmup": concurrency,
            "output_tokens": tokens,
            "input_tokens": 16,
            "out": out,
        }
        result = measure(emu.base_url, workers, settings)
        lines = [j for j in load_journal(out) if j["ok"] and not j["warmup"]]
        truth = {t["id"]: t for t in emu.wait_truth(len(load_journal(out)), timeout_s=10)}
    errors = np.asarray(
        [
            abs(j["ttft_s"] * 1e9 - (truth[j["response_id"]]["sent_ns"][0] - truth[j["response_id"]]["received_ns"]))
            for j in lines
            if j["response_id"] in truth
        ]
    )
    tps = result.summary["output_throughput_tps"] or 0.0
    ok = len(errors) > 0 and float(errors.mean()) <= TTFT_LIMIT_NS and result.summary["error_rate"] == 0
    detail = (
        f"{tps:,.0f} tok/s, TTFT error mean {errors.mean() / 1e6:.3f} ms, p99 {np.percentile(errors, 99) / 1e6:.3f} ms"
        if len(errors)
        else "no requests"
    )
    return ok, detail, tps


def search(start: float, trial: Callable[[float], bool], bisect: int, integer: bool, floor: float) -> float | None:
    """The highest load that passes: doubling from start (halving while start fails, down to
    floor), then bisecting between the last pass and the first failure."""
    good, bad = None, None
    load = start
    while good is None and load >= floor:
        if trial(load):
            good = load
        else:
            bad = load
            load = round(load / 2) if integer else load / 2
    if good is None:
        return None
    load = good * 2
    while bad is None or bad <= good:
        if trial(load):
            good = load
            load *= 2
        else:
            bad = load
    for _ in range(bisect):
        mid = (good + bad) / 2
        if integer:
            mid = round(mid)
            if mid in (good, bad):
                break
        if trial(mid):
            good = mid
        else:
            bad = mid
    return good


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--bisect", type=int, default=2)
    ap.add_argument("--workers", default="1,2")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    print(f"host: {os.cpu_count()} cores; busy share before the run (other processes): {busy_share():.0%}")
    rates: dict[int, float | None] = {}
    tokens: dict[int, float | None] = {}
    for n in counts:

        def rate_ok(rate: float, n: int = n) -> bool:
            ok, detail = rate_trial(n, rate, args.seconds)
            print(f"  (a) {n} worker(s), {rate:,.0f} req/s: {'held' if ok else 'not held'} ({detail})", flush=True)
            return ok

        rates[n] = search(250.0, rate_ok, args.bisect, integer=False, floor=30.0)
        best_tps: dict[float, float] = {}

        def tokens_ok(concurrency: float, n: int = n, best_tps: dict[float, float] = best_tps) -> bool:
            c = int(concurrency)
            if c < max(1, n):
                return True
            ok, detail, tps = token_trial(n, c, args.seconds)
            best_tps[c] = tps
            print(f"  (b) {n} worker(s), concurrency {c}: {'held' if ok else 'not held'} ({detail})", flush=True)
            return ok

        held = search(8, tokens_ok, args.bisect, integer=True, floor=2)
        tokens[n] = best_tps.get(int(held)) if held is not None else None
    print("\nresults (this host; the emulator's thread takes one core):")
    for n in counts:
        r, t = rates[n], tokens[n]
        print(
            f"  {n} worker(s): (a) {r:,.0f} req/s with p99 schedule lag < 1 ms" if r else f"  {n} worker(s): (a) none",
            end="; ",
        )
        print(f"(b) {t:,.0f} tok/s with mean TTFT error <= 1 ms" if t else "(b) none")
    print(f"busy share after (other processes included): {busy_share():.0%}")


if __name__ == "__main__":
    main()
