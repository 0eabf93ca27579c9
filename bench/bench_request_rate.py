"""Requests per second and the client's CPU per request (issue 42), in one run.

Against `pytps serve --ttft-ms 0 --itl-us 0 --embed-ms 0` in a process of its own, so the CPU
time this process spends (time.process_time: every thread of it, the native engine's included)
is the client's alone; the emulator's own CPU (from /proc) is printed beside it, so a cell where
the emulator is the limit says so. Cells: 1-token chat, embeddings and rerank, at concurrency 1,
64 and 256, on the native, asyncio and httpx transports. Each run's whole cost is counted (its
configuration, its journal, its summary and results.json); the per-request figure is marginal:
(CPU of a run of N - CPU of a run of N/10) / (N - N/10), so a run's fixed cost (measured on its
own in the fixed-cost column, per run) does not inflate it at small N.

Ratios measured in this run: each transport's CPU per request relative to native's, cell by cell.
Targets (issue 42): native, concurrency 64, chat and embeddings: <= 60 us of client CPU per request,
>= 8,000 req/s where the emulator keeps up. Peers (vLLM's bench, aiperf) are run only when already
installed; otherwise one line says they were skipped. CPU time is less sensitive to other load on
the machine than wall time, but not immune: the load average is printed with the figures.

    python bench/bench_request_rate.py [--quick] [--requests N] [--transports native,httpx]
        [--workloads chat,embeddings,rerank] [--concurrency 1,64,256] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

WORKLOADS: dict[str, dict[str, Any]] = {
    "chat": {"api": "openai-chat", "output_tokens": 1, "input_tokens": 16},
    "embeddings": {"api": "openai-embeddings", "input_tokens": 16},
    "rerank": {"api": "rerank", "input_tokens": 16},
}
TARGET_US, TARGET_RPS = 60.0, 8000.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Emulator:
    """`pytps serve` at zero latency, in its own process, on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = _free_port()
        cmd = [sys.executable, "-m", "pytps", "serve", "--port", str(self.port), "--ttft-ms", "0", "--itl-us", "0",
               "--embed-ms", "0"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise SystemExit("the emulator (pytps serve) did not start") from None
                time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def cpu_s(self) -> float:
        return _proc_cpu_s(self.proc.pid)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cell(base_url: str, emu: Emulator | None, workload: str, concurrency: int, transport: str, requests: int) -> dict:
    """A run of N/10 then one of N: marginal client CPU per request, the small run's CPU less its
    requests' share (the fixed cost), requests per second and errors of the large run."""
    small = one_run(base_url, emu, workload, concurrency, transport, max(requests // 10, 1))
    big = one_run(base_url, emu, workload, concurrency, transport, requests)
    marginal_s = (big["cpu_s"] - small["cpu_s"]) / (big["requests"] - small["requests"])
    return {**big, "cpu_us_per_request": marginal_s * 1e6, "whole_us_per_request": big["cpu_s"] / requests * 1e6,
            "fixed_ms": (small["cpu_s"] - marginal_s * small["requests"]) * 1e3}  # fmt: skip


def one_run(
    base_url: str, emu: Emulator | None, workload: str, concurrency: int, transport: str, requests: int
) -> dict:
    from pytps.app.runs import run

    out = tempfile.mkdtemp(prefix="pytps-bench-rps-")
    settings = {**WORKLOADS[workload], "requests": requests, "concurrency": concurrency, "transport": transport,
                "model": "m", "out": out + "/run"}  # fmt: skip
    emu0 = emu.cpu_s() if emu else 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run(base_url, **settings)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    emu_cpu = (emu.cpu_s() - emu0) if emu else float("nan")
    shutil.rmtree(out, ignore_errors=True)
    s = result.summary
    return {"workload": workload, "concurrency": concurrency, "transport": transport, "requests": requests,
            "errors": int(s.get("requests_failed") or 0), "cpu_s": cpu,
            "rps": requests / wall, "wall_s": wall, "emulator_cpu_s": emu_cpu,
            "emulator_busy": emu_cpu / wall if wall > 0 else float("nan")}  # fmt: skip


def use_tree(tree: str) -> None:
    """Imports pytps from `tree` from here on: the editable install's finder is set aside."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Redirecting" not in type(f).__name__]
    sys.path.insert(0, os.path.abspath(tree))
    import pytps

    print(f"pytps from {os.path.dirname(pytps.__file__)}")


def peers() -> None:
    there = {"vllm bench": importlib.util.find_spec("vllm"), "aiperf": shutil.which("aiperf")}
    found = [name for name, where in there.items() if where]
    if not found:
        print("peers: vLLM's bench and aiperf are not installed here: skipped (install them in a bench-only venv)")
        return
    print(f"peers installed ({', '.join(found)}): driving them is not automated yet: skipped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests, chat and embeddings at 64 only")
    ap.add_argument("--requests", type=int, default=None, help="requests per cell (default 5000; --quick 1000)")
    ap.add_argument("--transports", default="native,asyncio,httpx")
    ap.add_argument("--workloads", default=None, help="default chat,embeddings,rerank (--quick: chat,embeddings)")
    ap.add_argument("--concurrency", default=None, help="default 1,64,256 (--quick: 64)")
    ap.add_argument("--base-url", default=None, help="a running `pytps serve --ttft-ms 0 --itl-us 0 --embed-ms 0`")
    ap.add_argument("--json", default=None, help="also write the cells to this file")
    tree_help = ("measure the pytps of this source tree (e.g. `git archive main pytps` unpacked, with the installed "
                 "_core*.so and _version.py copied into its pytps/) instead of the installed one: a before/after "
                 "table, runs interleaved (the emulator stays the installed one)")  # fmt: skip
    ap.add_argument("--tree", default=None, help=tree_help)
    a = ap.parse_args()
    if a.tree:
        use_tree(a.tree)
    transports = a.transports.split(",")
    workloads = (a.workloads or ("chat,embeddings" if a.quick else "chat,embeddings,rerank")).split(",")
    levels = [int(c) for c in (a.concurrency or ("64" if a.quick else "1,64,256")).split(",")]
    requests = a.requests or (1000 if a.quick else 5000)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    cells = []
    emu = None if a.base_url else Emulator()
    base_url = a.base_url or (emu.base_url if emu else "")
    try:
        print(f"{'workload':10s} {'conc':>5s} {'transport':9s} {'requests':>8s} {'client CPU/req us':>17s} "
              f"{'x native':>8s} {'whole run/req us':>16s} {'fixed ms':>8s} {'req/s':>8s} "
              f"{'emulator busy':>13s} {'errors':>6s}")  # fmt: skip
        for w in workloads:
            for c in levels:
                n = min(requests, 1000) if c == 1 else requests
                native_us = None
                for t in transports:
                    r = cell(base_url, emu, w, c, t, n)
                    cells.append(r)
                    if t == "native":
                        native_us = r["cpu_us_per_request"]
                    ratio = f"{r['cpu_us_per_request'] / native_us:8.2f}" if native_us else f"{'-':>8s}"
                    print(f"{w:10s} {c:5d} {t:9s} {n:8d} {r['cpu_us_per_request']:17.1f} {ratio} "
                          f"{r['whole_us_per_request']:16.1f} {r['fixed_ms']:8.0f} {r['rps']:8.0f} "
                          f"{r['emulator_busy']:12.0%} {r['errors']:6d}", flush=True)  # fmt: skip
    finally:
        if emu:
            emu.close()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    peers()
    for r in cells:
        if r["transport"] == "native" and r["concurrency"] == 64 and r["workload"] in ("chat", "embeddings"):
            us_ok = r["cpu_us_per_request"] <= TARGET_US
            rps_ok = r["rps"] >= TARGET_RPS
            print(f"target {r['workload']} native @64: {r['cpu_us_per_request']:.0f} us/request "
                  f"({'MET' if us_ok else 'NOT MET'}, <= {TARGET_US:.0f}); {r['rps']:.0f} req/s "
                  f"({'MET' if rps_ok else 'NOT MET'}, >= {TARGET_RPS:.0f}; emulator busy "
                  f"{r['emulator_busy']:.0%} of one core)")  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"loadavg": os.getloadavg(), "cells": cells}, f, indent=1)


if __name__ == "__main__":
    main()
