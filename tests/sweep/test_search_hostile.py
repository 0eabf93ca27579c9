"""The capacity search against hostile servers (issue 40, defects 1-3): random arrivals on a server
that never saturates, a server that fails half its requests, a server that slows down during the
search, and random latency. The saturation rule is replayed over pytps's own Poisson and gamma
schedules; the search's verdicts run against model servers; each defect also runs once against
the emulator (`pytps serve`)."""

from __future__ import annotations

import heapq
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pytps.measure.saturation import replay
from pytps.runner.schedule import LoadPlan
from pytps.sweep.search import CapacitySearch, capacity_line
from pytps.sweep.verdict import ProbeRun, judge

SHAPES = [("poisson", 1.0), ("gamma", 0.5), ("gamma", 0.25)]


def schedule(rate: float, arrival: str, burstiness: float, seed: int, seconds: float) -> list[int]:
    """The run's own arrival offsets (ns) for `seconds`: what `pytps run --rate` sends."""
    plan = LoadPlan(rate_rps=rate, arrival=arrival, burstiness=burstiness, duration_s=seconds).validate()
    out = []
    for offset in plan.arrivals_ns(seed):
        if offset >= seconds * 1e9:
            return out
        out.append(int(offset))
    return out


def unbounded(arrivals: list[int], seed: int, ttft_s: float = 0.15, rest_s: float = 0.004, sd: float = 0.0):
    """(start, done, ttft, lag) per request of a server with no batch limit: every request is
    served at once, TTFT ttft_s (lognormal with sd `sd` when given: random latency)."""
    rng = np.random.default_rng(seed + 7919)
    if sd:
        sigma = np.sqrt(np.log1p((sd / ttft_s) ** 2))
        ttfts = rng.lognormal(np.log(ttft_s) - sigma**2 / 2, sigma, len(arrivals))
    else:
        ttfts = ttft_s + np.abs(rng.normal(0, 0.003, len(arrivals)))
    return [(t, t + int((x + rest_s) * 1e9), float(x), 0.0) for t, x in zip(arrivals, ttfts, strict=True)]


def batch(arrivals: list[int], slots: int, service_s: float, ttft_s: float):
    """(start, done, ttft, lag) per request of a FIFO server of `slots` slots, each request holding
    one for service_s (the emulator's --max-batch model)."""
    free = [0.0] * slots
    out = []
    for t_ns in arrivals:
        t = t_ns / 1e9
        start = max(t, heapq.heappop(free))
        heapq.heappush(free, start + service_s)
        out.append((t_ns, int((start + service_s) * 1e9), start - t + ttft_s, 0.0))
    return out


# ---- defect 1: random arrivals on a server with no saturation ---------------------------------


@pytest.mark.parametrize(("arrival", "burstiness"), SHAPES)
@pytest.mark.parametrize("rate", [2.0, 20.0, 150.0])
def test_random_arrivals_on_an_unbounded_server_are_never_saturated(arrival, burstiness, rate):
    """20 seeds of pytps's own schedules (10 s each): the in-flight count is the arrivals made less
    the requests done, so a sparse stretch is not growth. (The nominal `1 + rate x t - done` called
    114 of 240 such schedules saturated.)"""
    called = {}
    for seed in range(20):
        arrivals = schedule(rate, arrival, burstiness, seed, 10.0)
        why = replay("rate", rate, arrivals, unbounded(arrivals, seed))
        if why:
            called[seed] = why
    assert not called, called


@pytest.mark.parametrize(("arrival", "burstiness"), SHAPES)
def test_random_latency_is_not_called_saturated(arrival, burstiness):
    """Defect 3: TTFT drawn lognormal with its sd equal to its mean: noise, no trend."""
    called = {}
    for seed in range(20):
        arrivals = schedule(20.0, arrival, burstiness, seed, 10.0)
        why = replay("rate", 20.0, arrivals, unbounded(arrivals, seed, ttft_s=0.2, sd=0.2))
        if why:
            called[seed] = why
    assert not called, called


@pytest.mark.parametrize(("arrival", "burstiness"), SHAPES)
def test_a_batch_servers_saturation_is_still_caught_under_random_arrivals(arrival, burstiness):
    """8 slots of 36 ms: 222 req/s. At 260 req/s every seed is past saturation; at 150 (68%) none is."""
    for seed in range(20):
        over = schedule(260.0, arrival, burstiness, seed, 8.0)
        assert replay("rate", 260.0, over, batch(over, 8, 0.036, 0.005)), seed
        under = schedule(150.0, arrival, burstiness, seed, 8.0)
        assert replay("rate", 150.0, under, batch(under, 8, 0.036, 0.005)) is None, seed


def sweep(tmp: Path, base_url: str, *flags: str, timeout: float = 600) -> tuple[dict, str, float]:
    t = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "pytps", "sweep", "--base-url", base_url, "--search", "rate", *flags,
         "--out", str(tmp / "s")],  # fmt: skip
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    wall = time.monotonic() - t
    assert p.returncode == 0, p.stderr
    return json.loads((tmp / "s" / "sweep.json").read_text())["search"], p.stdout, wall


def test_search_against_an_unbounded_emulator_with_poisson_arrivals_is_not_saturated(tmp_path: Path):
    """The issue's case: `pytps serve --ttft-ms 150 --itl-us 1000` and a Poisson search answered
    "below 4.51 req/s: no probe passed (past saturation …)"."""
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=150, itl_us=1000) as emu:
        search, out, _ = sweep(tmp_path, emu.base_url, "--slo-run", "ttft:p90=1.0", "--output-tokens", "4",
                               "--search-max-probes", "4", "--search-probe-s", "4")  # fmt: skip
    assert not [p for p in search["probes"] if p["saturation"]], search["probes"]
    assert all(p["status"] == "pass" for p in search["probes"]), search["probes"]
    assert search["capacity"]["low"] is not None and search["unstable"] is None
    assert "capacity: above" in out


def test_search_still_catches_an_emulator_batch_limit(tmp_path: Path):
    """--max-batch 4, 37 ms a request: 108 req/s. A Poisson probe at 300 req/s is past saturation."""
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=5, itl_us=1000, max_batch=4) as emu:
        search, _, _ = sweep(tmp_path, emu.base_url, "--slo-run", "ttft:p90=5", "--output-tokens", "32",
                             "--search-start", "300", "--search-max-probes", "2", "--search-probe-s", "6")  # fmt: skip
    first = search["probes"][0]
    assert first["load"] == 300 and first["status"] == "fail" and first["saturation"], first


# ---- defect 2: errors decide first; a probe and the search are bounded in time -----------------


class Clock:
    """A search's clock that a model server advances by each probe's seconds (and start-up)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_error_rate_decides_before_saturation():
    rng = np.random.default_rng(0)
    runs = [ProbeRun({"ttft_s": list(rng.normal(0.1, 0.01, 200))}, [i % 2 == 0 for i in range(200)],
                     "requests in flight grew", 30.0, "x")]  # fmt: skip
    status, checks, deciding = judge(runs, {"ttft:p90": 1.0}, 0.01)
    assert status == "fail" and deciding is not None and deciding["target"] == "error_rate"
    assert [c["target"] for c in checks][:2] == ["error_rate", "saturation"]


def test_a_failing_server_is_searched_within_its_budget_and_named_by_its_error_rate():
    """Half the requests fail, and the queue looks saturated too. Each probe is bounded in time (the
    server is asked for `seconds`, never for a request count), and the search stops at its budget
    with the best it has."""
    clock = Clock()
    asked: list[float] = []

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        asked.append(seconds)
        clock.t += seconds + 0.5
        n = max(int(load * seconds), 2)
        return ProbeRun({"ttft_s": [0.05] * n}, [i % 2 == 0 for i in range(n)], "requests in flight grew", load, name)

    s = CapacitySearch("rate", run_probe, {"ttft:p90": 1.0}, start=100, probe_s=10, budget_s=45, max_probes=50,
                       clock=clock)  # fmt: skip
    out = s.run()
    assert out["stopped"] == "budget" and out["elapsed_s"] <= 45, out["elapsed_s"]
    assert asked and all(x == 10 for x in asked)
    assert out["capacity"]["low"] is None and out["capacity"]["high"] == 100 / 2 ** (len(asked) - 1)
    line = capacity_line(out)
    assert "error rate 50" in line and "budget of 45 s ran out" in line, line


def test_a_budget_that_runs_out_reports_the_best_bracket_so_far():
    clock = Clock()

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        clock.t += seconds
        ttft = 0.0002 * load  # p90 meets 50 ms at 250 req/s
        return ProbeRun({"ttft_s": [ttft] * 300}, [True] * 300, None, load, name)

    out = CapacitySearch("rate", run_probe, {"ttft:p90": 0.05}, start=20, probe_s=10, budget_s=60,
                         clock=clock).run()  # fmt: skip
    cap = out["capacity"]
    assert out["stopped"] == "budget" and out["runs"] == 6 and out["elapsed_s"] <= 60
    assert cap["low"] == 160 and cap["high"] == 320 and not cap["converged"]
    assert "budget of 60 s ran out" in capacity_line(out)


@pytest.mark.parametrize("bad", ["0", "-1", "inf", "nan"])
def test_bad_time_bounds_are_one_line(tmp_path: Path, bad: str):
    for flag in ("--search-probe-s", "--search-budget-s"):
        p = subprocess.run([sys.executable, "-m", "pytps", "sweep", "--base-url", "http://127.0.0.1:9/v1",
                            "--search", "rate", flag, bad, "--out", str(tmp_path / "s")],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert p.returncode == 2 and flag in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_probe_is_bounded_by_time_not_requests(tmp_path: Path):
    p = subprocess.run([sys.executable, "-m", "pytps", "sweep", "--base-url", "http://127.0.0.1:9/v1", "--search",
                        "rate", "--requests", "30", "--out", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 2 and "leave out --requests" in p.stderr and "--search-probe-s" in p.stderr


def test_a_half_failing_emulator_finishes_within_its_budget_naming_the_error_rate(tmp_path: Path):
    from pytps.emulator import Emulator

    budget = 30
    with Emulator(ttft_ms=20, itl_us=1000, faults=["500:p=0.5"]) as emu:
        search, out, wall = sweep(tmp_path, emu.base_url, "--slo-run", "ttft:p90=1.0", "--output-tokens", "4",
                                  "--search-probe-s", "3", "--search-budget-s", str(budget))  # fmt: skip
    assert search["elapsed_s"] <= budget and wall < budget + 15, (search["elapsed_s"], wall)
    assert search["capacity"]["low"] is None
    assert search["capacity"]["high_deciding"]["target"] == "error_rate"
    assert "error rate" in out and "past saturation" not in out, out


# ---- defect 3: a probe lasts a few TTFTs; a drifting server is unstable ------------------------


def test_a_probe_lasts_at_least_five_ttfts():
    asked: list[tuple[str, float]] = []

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        asked.append((mode, seconds))
        return ProbeRun({"ttft_s": [0.535] * 50}, [True] * 50, None, 1.8 if mode == "concurrency" else load, name)

    CapacitySearch("rate", run_probe, {"ttft:p90": 10.0}, probe_s=1, max_probes=4).run()
    assert asked[0] == ("concurrency", 1)  # the start run: what one request in flight sustains
    assert all(s >= 5 * 0.535 for mode, s in asked[1:]), asked


def drifting(clock: Clock, ttft0: float = 0.1, ramp: float = 0.04, capacity: float = 1e9):
    """A server whose TTFT grows by `ramp` seconds per second of the search."""
    rng = np.random.default_rng(3)

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        n = 100 if mode == "concurrency" else max(int(load * seconds), 20)
        t = clock.t + np.linspace(0, seconds, n)
        clock.t += seconds + 0.3
        ttft = ttft0 + ramp * t + rng.normal(0, 0.005, n)
        return ProbeRun({"ttft_s": list(ttft)}, [True] * n, None, 5.0 if mode == "concurrency" else load, name)

    return run_probe


def test_a_drifting_server_is_reported_unstable_not_as_a_capacity():
    clock = Clock()
    out = CapacitySearch("rate", drifting(clock), {"ttft:p90": 2.0}, probe_s=3, budget_s=60, clock=clock).run()
    assert out["unstable"] is not None and out["unstable"]["target"] == "ttft:p90", out["probes"]
    assert out["probes"][-1]["recheck"]
    line = capacity_line(out)
    assert line.startswith("the server is unstable") and "capacity:" not in line, line
    # The same server without drift: stable, and a capacity.
    clock = Clock()
    out = CapacitySearch("rate", drifting(clock, ramp=0.0), {"ttft:p90": 2.0}, probe_s=3, budget_s=60,
                         clock=clock).run()  # fmt: skip
    assert out["unstable"] is None and capacity_line(out).startswith("capacity:")


def test_a_drifting_emulator_is_reported_unstable(tmp_path: Path):
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=100, itl_us=1000, ttft_ramp_ms_per_s=40) as emu:
        search, out, _ = sweep(tmp_path, emu.base_url, "--slo-run", "ttft:p90=2.0", "--output-tokens", "4",
                               "--search-start", "20", "--search-probe-s", "3", "--search-budget-s", "45")  # fmt: skip
    assert search["unstable"] is not None, search["probes"]
    assert "the server is unstable" in out and "capacity: " not in out, out


def test_a_client_that_fell_behind_is_not_the_servers_capacity():
    """The schedule-lag rule says the client could not send on schedule: the load was not offered,
    so the probe is undecided (run again, never a pass), not a server's saturation."""
    from pytps.measure.saturation import CLIENT_LAG

    lagging = ProbeRun({"ttft_s": [0.15] * 100}, [True] * 100, f"{CLIENT_LAG} to 0.445 s: the client could not send",
                       50.0, "x")  # fmt: skip
    status, _, deciding = judge([lagging], {"ttft:p90": 1.0}, 0.01)
    assert status == "undecided" and deciding is not None and deciding["target"] == "client"


def test_a_handful_of_requests_never_passes_and_a_low_rate_probe_lasts_for_twenty():
    """One ok request has an error rate of 0% [0%, 0%]: a pass needs 20 measured requests, and a
    rate probe is long enough for them (the 50%-error soak halved down to 0.1 req/s and "passed"
    there on one request)."""
    one = ProbeRun({"ttft_s": [0.15]}, [True], None, 0.1, "x")
    status, _, deciding = judge([one], {"ttft:p90": 1.0}, 0.01)
    assert status == "undecided" and deciding is not None and deciding["target"] == "requests"
    asked: list[float] = []

    def run_probe(mode: str, load: float, name: str, seconds: float) -> ProbeRun:
        asked.append(seconds)
        n = int(load * seconds)
        return ProbeRun({"ttft_s": [0.15] * n}, [i % 2 == 0 for i in range(n)], None, load, name)

    out = CapacitySearch("rate", run_probe, {"ttft:p90": 1.0}, start=4, probe_s=2, budget_s=300, max_probes=20).run()
    assert asked[:3] == [10.0, 20.0, 40.0] and out["capacity"]["low"] is None


def test_jitter_far_below_the_limit_is_not_instability():
    from pytps.sweep.verdict import Probe, disagreement

    def probe(value: float, lo: float, hi: float) -> Probe:
        check = {"target": "ttft:p90", "value": value, "ci95": [lo, hi], "limit": 0.5, "verdict": "pass"}
        return Probe(20.0, "pass", [], [check], check, 20.0)

    assert disagreement(probe(0.0026, 0.0021, 0.004), probe(0.0157, 0.010, 0.022)) is None  # 13 ms of 500
    assert disagreement(probe(0.2, 0.19, 0.21), probe(0.45, 0.43, 0.47)) is not None
