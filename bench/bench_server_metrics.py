"""What scraping the server's metrics costs the client's stamps: `pytps calibrate`'s figures of one
cell (the emulator's truth against pytps's stamps: mean |TTFT error| and p99 stamp delay), with and
without `--server-metrics` scraping the emulator's /metrics every --interval seconds, on the native
and asyncio transports. Off and on alternate, --repeat times each, so drift in the machine's load
falls on both; the medians are printed, with the ratio on/off. The emulator runs as its own process.

    python bench/bench_server_metrics.py [--events-per-s 1000] [--concurrency 8] [--repeat 3]
                                         [--interval 0.1] [--transports native,asyncio] [--also-thread]

"on" scrapes as `pytps run --server-metrics` does (a process of its own); --also-thread adds
"thread": a scraper thread inside the run's process, the design the process replaced.

Target (docs/server-metrics.md): with scraping on, both figures stay inside the envelope measured
without it (`pytps calibrate`'s thresholds: TTFT error 0.5 ms, p99 stamp delay 1 ms).
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytps.runner.config as config
from pytps.calibrate.envelope import THRESHOLDS
from pytps.calibrate.ladder import Ladder
from pytps.calibrate.session import Settings, Who, run_calibration
from pytps.runner.scrape_process import ScraperProcess
from pytps.runner.scraper import Scraper


@contextmanager
def scraping(interval_s: float | None, in_process: bool = False) -> Iterator[None]:
    """Every run the calibration makes scrapes its emulator's /metrics (None: as it is); with
    in_process, on a thread of the run's own process instead of the scraper's process (the
    alternative the process replaced, for the record)."""
    original, original_for_run = config.make_config, ScraperProcess.for_run
    if interval_s is None:
        yield
        return

    def with_metrics(base_url: str, **kw: Any) -> config.RunConfig:
        return original(base_url, server_metrics=True, server_metrics_interval=interval_s, **kw)

    def thread(sm: Any, out_dir: Any, *, insecure: bool, redactor: Any) -> Any:
        return Scraper(sm.urls, out_dir, interval_s=sm.interval_s, headers=sm.headers, insecure=insecure)

    config.make_config = with_metrics  # type: ignore[assignment]
    if in_process:
        ScraperProcess.for_run = thread  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        config.make_config = original
        ScraperProcess.for_run = original_for_run  # type: ignore[method-assign]


def cell(
    transport: str, events_per_s: float, concurrency: int, interval_s: float | None, in_process: bool = False
) -> dict[str, Any]:
    ladder = Ladder((events_per_s,), (concurrency,), stream_s=2.0, tokens_per_event={events_per_s: (1,)})
    with scraping(interval_s, in_process):
        data = run_calibration(Settings(ladder, [Who(transport, transport=transport)], dict(THRESHOLDS)))
    (c,) = data["cells"]
    return dict(c["figures"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events-per-s", type=float, default=1000.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--transports", default="native,asyncio")
    ap.add_argument(
        "--also-thread", action="store_true", help="also scrape from a thread of the run's process (the old way)"
    )
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs", flush=True)
    print(f"cell: {a.events_per_s:g} events/s per stream x {a.concurrency}, scrape interval {a.interval} s")
    print(f"{'transport':9s} {'scrape':6s} {'TTFT err ms':>12s} {'p99 delay us':>13s}  runs")
    for tr in a.transports.split(","):
        runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        if a.also_thread:
            runs["thread"] = []
        for _ in range(a.repeat):
            runs["off"].append(cell(tr, a.events_per_s, a.concurrency, None))
            runs["on"].append(cell(tr, a.events_per_s, a.concurrency, a.interval))
            if a.also_thread:
                runs["thread"].append(cell(tr, a.events_per_s, a.concurrency, a.interval, in_process=True))
        med = {}
        for mode, figs in runs.items():
            ttft = statistics.median(f["ttft_error_mean_ms"] for f in figs)
            p99 = statistics.median(f["stamp_delay_p99_us"] for f in figs)
            med[mode] = (ttft, p99)
            each = " ".join(f"{f['ttft_error_mean_ms']:.3f}/{f['stamp_delay_p99_us']:.0f}" for f in figs)
            print(f"{tr:9s} {mode:6s} {ttft:12.3f} {p99:13.0f}  {each}", flush=True)
        (t0, d0), (t1, d1) = med["off"], med["on"]
        print(f"{tr:9s} on/off {t1 / t0 if t0 else float('nan'):12.2f} {d1 / d0 if d0 else float('nan'):13.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
