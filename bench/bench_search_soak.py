"""The capacity search against each hostile server (issue 40): does it answer the truth, and within
its time budget?

Each case is a real `pytps sweep --search rate` against the emulator (`pytps.Emulator`, in this
process's children), Poisson arrivals unless said:

1. unbounded: `--ttft-ms 150 --itl-us 1000`, no batch limit (capacity practically unbounded), over
   several seeds: the answer must never be "past saturation" (it was "below 4.51 req/s" before);
2. errors: the same server failing half its requests (`--fault 500:p=0.5`): the answer must name
   the error rate, within the budget;
3. drifting: TTFT growing by 20 ms a second (`--ttft-ramp-ms-per-s 20`): "the server is unstable";
4. random latency with a batch limit: lognormal TTFT (sd = mean), `--max-batch 8`: a capacity
   bracket, not noise called saturated.

Printed per case: wall time, the search's own elapsed time against its budget, runs, and the
answer line. The wall times are the machine's, not a target: the claim is the answer, and that
each search ends within its budget (plus start-up and the last probe's in-flight requests).
Usage: python bench/bench_search_soak.py [--budget-s 120] [--probe-s 10] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytps
from pytps.measure.saturation import CLIENT_LAG

SLO = ["--slo-run", "ttft:p90=1.0", "--output-tokens", "4"]


def search(base_url: str, out: Path, budget_s: float, probe_s: float, *flags: str) -> tuple[float, dict[str, Any], str]:
    argv = [sys.executable, "-m", "pytps", "sweep", "--base-url", base_url, "--search", "rate", *SLO,
            "--search-budget-s", str(budget_s), "--search-probe-s", str(probe_s), "--no-store", *flags,
            "--out", str(out)]  # fmt: skip
    t = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"pytps sweep failed ({p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
    result = json.loads((out / "sweep.json").read_text())["search"]
    answer = next(line for line in p.stdout.splitlines() if line.startswith(("capacity:", "the server is unstable")))
    return wall, result, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--probe-s", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the unbounded Poisson case")
    args = ap.parse_args()
    base = {"ttft_ms": 150, "itl_us": 1000}
    cases: list[tuple[str, dict[str, Any], list[str], str]] = [
        *[(f"unbounded, Poisson seed {s}", base, ["--seed", str(s)], "not saturated") for s in range(args.seeds)],
        ("50% errors", {**base, "faults": ["500:p=0.5"]}, [], "error rate"),
        ("drifting +20 ms/s", {**base, "ttft_ramp_ms_per_s": 20}, [], "unstable"),
        (
            "random latency, 8 slots",
            {**base, "ttft_dist": "lognormal", "ttft_sd_ms": 150, "max_batch": 8},
            [],
            "a bracket",
        ),
    ]
    print(f"capacity search soak: budget {args.budget_s:g} s, probes of {args.probe_s:g} s, --slo-run ttft:p90=1.0")
    print(f"{'server':<26} {'wall s':>7} {'search s':>9} {'runs':>5}  {'expect':<14} answer")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, emu, flags, expect) in enumerate(cases):
            with pytps.Emulator(**emu) as e:
                wall, result, answer = search(e.base_url, Path(tmp) / str(i), args.budget_s, args.probe_s, *flags)
            reasons = [p["saturation"] for p in result["probes"] if p["saturation"]]
            client = sum(1 for r in reasons if r.startswith(CLIENT_LAG))
            print(f"{name:<26} {wall:7.1f} {result['elapsed_s']:9.1f} {result['runs']:5d}  {expect:<14} {answer}")
            if reasons:
                print(f"{'':<26} ({len(reasons) - client} probe(s) past saturation, {client} with the client behind)")


if __name__ == "__main__":
    main()
