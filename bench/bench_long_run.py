"""Claim: a run's cost is fixed + per request + per token, and none of the three grows with the
run's length. One `pytps run` process per size, against `pytps serve` in its own process.

Prints, measured in this one run:
  - the client process's CPU (user + system) per request at 10k, 100k and 1M requests of 16
    tokens, and their ratio (target: 1M within 1.2x of 10k), with each process's peak RSS
    (target: under 150 MB at 1M, and at most 1.5x the 100k figure: the summary's per-request
    columns are spilled to a file, pytps.measure.columns);
  - the cost model: fixed (the whole `pytps run --requests 1 --output-tokens 1` process against a
    server already running; target: at most 0.15 s of CPU), per request and per token (from 10k
    requests of 1 and of 64 tokens).

    python bench/bench_long_run.py [--sizes 10000,100000,1000000] [--concurrency 64]

On this project's 2-core machine the 1M run takes about three minutes. The emulator answers at
once (no TTFT, no gaps) so that the client's own cost is what limits the rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def serve() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", "0", "--ttft-ms", "0", "--itl-us", "0",
         "--max-output-tokens", "100000"],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.split("serving on ")[1].split()[0]


def client_run(url: str, out: Path, requests: int, tokens: int, concurrency: int) -> dict[str, float]:
    """One `pytps run` process: its CPU, wall time and peak RSS, from the kernel's accounting."""
    cmd = [sys.executable, "-m", "pytps", "run", "--base-url", url, "--requests", str(requests),
           "--concurrency", str(concurrency), "--output-tokens", str(tokens), "--input-tokens", "16",
           "--out", str(out), "--json"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"pytps run failed ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
    summary = json.loads((out / "results.json").read_text())["summary"]
    if summary["requests_ok"] != requests:
        raise SystemExit(f"{requests - summary['requests_ok']} of {requests} requests failed: {summary['errors']}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall, "rss_mb": usage.ru_maxrss / 1024,
            "journal_mb": (out / "requests.jsonl").stat().st_size / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="pytps-long-"))
    server, url = serve()
    try:
        # Warm the file cache and the server; not measured.
        client_run(url, tmp / "warm", 1, 1, 1)
        fixed = [client_run(url, tmp / f"fixed{i}", 1, 1, 1)["cpu_s"] for i in range(5)]
        fixed_s = sorted(fixed)[len(fixed) // 2]
        one = client_run(url, tmp / "t1", 10_000, 1, args.concurrency)
        many = client_run(url, tmp / "t64", 10_000, 64, args.concurrency)
        per_token_us = (many["cpu_s"] - one["cpu_s"]) / (10_000 * 63) * 1e6
        per_request_us = ((one["cpu_s"] - fixed_s) / 10_000 * 1e6) - per_token_us
        rows = []
        for n in sizes:
            r = client_run(url, tmp / f"n{n}", n, 16, args.concurrency)
            shutil.rmtree(tmp / f"n{n}")
            r["requests"] = n
            r["cpu_us_per_request"] = (r["cpu_s"] - fixed_s) / n * 1e6
            rows.append(r)
            print(f"  {n:>9,} requests: {r['cpu_s']:8.1f} s CPU, {r['wall_s']:7.1f} s wall, "
                  f"{r['cpu_us_per_request']:6.1f} us CPU/request, peak RSS {r['rss_mb']:6.1f} MB, "
                  f"journal {r['journal_mb']:.0f} MB", flush=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    base = rows[0]
    print("\nclient CPU per request (16 tokens each, concurrency %d), fixed cost taken out:" % args.concurrency)
    print("| requests | CPU s | wall s | CPU us/request | ratio to %s | peak RSS MB |" % f"{base['requests']:,}")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['requests']:,} | {r['cpu_s']:.1f} | {r['wall_s']:.1f} | {r['cpu_us_per_request']:.1f} | "
              f"{r['cpu_us_per_request'] / base['cpu_us_per_request']:.3f} | {r['rss_mb']:.1f} |")
    last = rows[-1]
    ratio = last["cpu_us_per_request"] / base["cpu_us_per_request"]
    print(f"\ntarget CPU/request at {last['requests']:,} within 1.2x of {base['requests']:,}: "
          f"{ratio:.3f}x -> {'MET' if ratio <= 1.2 else 'NOT MET'}")
    print(f"target peak RSS under 150 MB at {last['requests']:,}: {last['rss_mb']:.1f} MB -> "
          f"{'MET' if last['rss_mb'] < 150 else 'NOT MET'}")
    if len(rows) >= 2:
        prev = rows[-2]
        growth = last["rss_mb"] / prev["rss_mb"]
        print(f"target peak RSS at {last['requests']:,} at most 1.5x {prev['requests']:,}'s: {growth:.2f}x -> "
              f"{'MET' if growth <= 1.5 else 'NOT MET'}")
    print("\ncost model (client process, CPU):")
    print(f"  fixed        {fixed_s * 1e3:7.1f} ms   (median of 5 runs of --requests 1 --output-tokens 1: "
          + ", ".join(f"{x * 1e3:.0f}" for x in fixed) + " ms)")
    print(f"  per request  {per_request_us:7.1f} us")
    print(f"  per token    {per_token_us:7.2f} us")
    print(f"target fixed cost at most 150 ms: {fixed_s * 1e3:.0f} ms -> {'MET' if fixed_s <= 0.15 else 'NOT MET'}")


if __name__ == "__main__":
    main()
