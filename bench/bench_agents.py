"""The client's own cost per agent turn: CPU time per turn and resident memory, at 16 and 256
concurrent agents replaying generated trajectories against the emulator (its own process, so
this process's CPU is the client's alone: the driver, rendering each turn's growing context to
JSON, the transport and its engine thread).

    python bench/bench_agents.py [--agents 16,256] [--turns 10-20] [--context 16000] [--api openai-chat]

Prints, per case: turns, wall time, CPU per turn (ms; the first case also pays the transport's
imports), what rendering one turn's request alone takes, and the process's RSS after the run and
its peak. Measured on the 2-core dev machine, shared and busy (01:40 UTC, issue 35):

    agents  turns  wall s CPU/turn ms render ms  RSS MB peak MB
        16    255    18.5       2.776     0.121      44      44
       256   3866    29.7       1.018     0.117      95      97
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from pytps.runner.agents import AgentSettings, run_agents
from pytps.workload.agent_requests import agent_request
from pytps.workload.agent_sources import SyntheticAgents


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="16,256")
    ap.add_argument("--turns", default="10-20")
    ap.add_argument("--context", type=int, default=16000)
    ap.add_argument("--api", default="openai-chat")
    args = ap.parse_args()
    port = _free_port()
    cmd = [sys.executable, "-m", "pytps", "serve", "--port", str(port), "--ttft-ms", "20", "--itl-us", "1000",
           "--prefix-cache-tokens", "50000000"]  # fmt: skip
    emu = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the emulator did not start") from None
                time.sleep(0.05)
        head = ("agents", "turns", "wall s", "CPU/turn ms", "render ms", "RSS MB", "peak MB")
        print("{:>6} {:>6} {:>7} {:>11} {:>9} {:>7} {:>7}".format(*head))
        for n in (int(x) for x in args.agents.split(",")):
            spec = f"synthetic:count={n},turns={args.turns},context={args.context},tool_s=0.5,seed=7"
            trajs = SyntheticAgents.parse(spec).trajectories()
            turns = sum(len(t.turns) for t in trajs)
            # What rendering alone costs: every turn's body, once, outside the run.
            r0 = _cpu_s()
            for t in trajs:
                for k, turn in enumerate(t.turns):
                    _path, body = agent_request(args.api, "m", t.context(k), t.tools, turn.output_tokens)
                    json.dumps(body).encode()
            render = (_cpu_s() - r0) / turns
            c0, w0 = _cpu_s(), time.monotonic()
            settings = AgentSettings(f"http://127.0.0.1:{port}", api=args.api, agents=n)
            run = asyncio.run(run_agents(settings, trajs))
            cpu = (_cpu_s() - c0) / turns
            wall = time.monotonic() - w0
            ok = sum(1 for r in run.turn_rows() if r.ok)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n:6d} {ok:6d} {wall:7.1f} {cpu * 1e3:11.3f} {render * 1e3:9.3f} {_rss_mb():7.0f} {peak:7.0f}")
    finally:
        emu.terminate()
        emu.wait(10)


if __name__ == "__main__":
    main()
