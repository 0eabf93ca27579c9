"""The capacity search (pytps.sweep.search): its placement and verdicts against a model server whose
capacity is known, then against the emulator's load model (timing tier)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytps.errors import ConfigError
from pytps.measure.saturation import SaturationRule, SaturationWatch
from pytps.sweep.search import CapacitySearch, capacity_line
from pytps.sweep.verdict import ProbeRun


def model_server(capacity: float, ttft_s: float = 0.005, seed: int = 0, sd: float = 0.0002):
    """A server with a hard capacity in req/s: below it TTFT is ttft_s (with noise); above it the
    queue grows, the run is past saturation and completions run at the capacity."""
    rng = np.random.default_rng(seed)
    calls: list[tuple[str, float]] = []

    def run_probe(mode: str, load: float, name: str, seconds: float = 10.0) -> ProbeRun:
        calls.append((mode, load))
        n = 400
        if mode == "concurrency":  # one request in flight: 1 / latency
            return ProbeRun({"ttft_s": list(rng.normal(ttft_s, sd, n))}, [True] * n, None, 1 / 0.036, name)
        over = load > capacity
        ttft = rng.normal(ttft_s, sd, n) + (np.linspace(0, 2.0, n) * (load - capacity) / capacity if over else 0)
        sat = f"requests in flight grew ({load:g} > {capacity:g})" if over else None
        return ProbeRun({"ttft_s": list(ttft)}, [True] * n, sat, min(load, capacity), name)

    return run_probe, calls


@pytest.mark.parametrize("capacity", [222.2, 37.5, 1000.0, 5.3])
def test_rate_search_brackets_the_capacity_within_precision_in_few_probes(capacity):
    run_probe, calls = model_server(capacity)
    s = CapacitySearch("rate", run_probe, {"ttft:p90": 0.1}, precision=0.05, max_probes=11)  # 10 + the recheck
    out = s.run()
    cap = out["capacity"]
    assert cap["low"] <= capacity < cap["high"], cap
    assert cap["width"] <= 0.05 and cap["converged"]
    assert out["runs"] == len(calls) <= 11 and out["unstable"] is None
    assert out["probes"][-1]["recheck"] and out["probes"][-1]["status"] == "pass"
    # Never a load past the capacity reported as passing.
    assert all(p["load"] <= capacity for p in out["probes"] if p["status"] == "pass")


def test_a_target_decides_where_the_server_is_not_saturated():
    # TTFT grows with load (0.2 ms per req/s, sd 1 ms) with no hard capacity: its p90 is
    # 0.0002 x + 1.2816 ms, which meets the SLO of 50 ms at x = 243.6 req/s.
    rng = np.random.default_rng(1)

    def run_probe(mode: str, load: float, name: str, seconds: float = 10.0) -> ProbeRun:
        base = 0.036 if mode == "concurrency" else 0.0002 * load
        return ProbeRun({"ttft_s": list(rng.normal(base, 0.001, 300))}, [True] * 300, None, load, name)

    out = CapacitySearch("rate", run_probe, {"ttft:p90": 0.05}, start=20, max_probes=12).run()
    cap = out["capacity"]
    assert cap["low"] <= 243.6 <= cap["high"] and cap["width"] <= 0.05
    assert cap["low_deciding"]["target"] == "ttft:p90" and cap["high_deciding"]["target"] == "ttft:p90"
    assert "capacity:" in capacity_line(out)


def test_an_interval_straddling_the_limit_is_repeated_then_reported_undecided():
    runs = []

    def run_probe(mode: str, load: float, name: str, seconds: float = 10.0) -> ProbeRun:
        runs.append(name)
        # p90 right at the limit, wide spread: the interval straddles 0.1 s every time.
        values = list(np.random.default_rng(len(runs)).normal(0.085, 0.012, 60))
        return ProbeRun({"ttft_s": values}, [True] * 60, None, load, name)

    s = CapacitySearch("rate", run_probe, {"ttft:p90": 0.1}, start=10, repeats=2, max_probes=3, recheck=False)
    p = s.probe(10.0)
    assert p.status == "undecided" and len(p.runs) == 3
    assert runs == ["rate=10", "rate=10-2", "rate=10-3"]


def test_concurrency_search_bisects_integers():
    def run_probe(mode: str, load: float, name: str, seconds: float = 10.0) -> ProbeRun:
        assert load == int(load)
        ttft = 0.01 * load  # 10 ms per request in flight
        return ProbeRun({"ttft_s": [ttft] * 50}, [True] * 50, None, load / 0.1, name)

    out = CapacitySearch("concurrency", run_probe, {"ttft:p90": 0.235}, max_probes=12).run()
    assert (out["capacity"]["low"], out["capacity"]["high"]) == (23, 24)


def test_errors_fail_a_probe():
    def run_probe(mode: str, load: float, name: str, seconds: float = 10.0) -> ProbeRun:
        ok = [True] * 200 if load < 50 else [i % 5 != 0 for i in range(200)]
        return ProbeRun({"ttft_s": [0.01] * 200}, ok, None, load, name)

    out = CapacitySearch("rate", run_probe, {}, start=10, max_probes=12).run()
    assert out["capacity"]["low"] < 50 <= out["capacity"]["high"]
    assert out["capacity"]["high_deciding"]["target"] == "error_rate"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"precision": 0}, "--search-precision"), ({"max_probes": 1}, "--search-max-probes"),
     ({"start": -1}, "--search-start"), ({"axis": "input_tokens"}, "--search")],  # fmt: skip
)
def test_bad_settings_are_one_line(kwargs, needle):
    args = {"axis": "rate", "run_probe": None, "slo_run": {}, **kwargs}
    with pytest.raises(ConfigError, match=needle):
        CapacitySearch(**args)


# ---- saturation ------------------------------------------------------------------------------


def feed_rate(watch: SaturationWatch, rate: float, capacity: float, seconds: float) -> str | None:
    """Constant arrivals at `rate` into a server finishing `capacity` per second (FIFO)."""
    t, served_at = 0.0, 0.0
    why = None
    for i in range(int(rate * seconds)):
        watch.arrived(int(i / rate * 1e9))
    for i in range(int(rate * seconds)):
        t = i / rate
        served_at = max(served_at, t) + 1 / capacity
        why = watch.observe(int(t * 1e9), int(served_at * 1e9), served_at - t) or why
        if why:
            break
    return why


def test_saturation_rule_calls_growth_and_spares_a_loaded_server():
    assert feed_rate(SaturationWatch("rate", 230.0), 230.0, 222.2, 6) is not None
    assert feed_rate(SaturationWatch("rate", 218.0), 218.0, 222.2, 6) is None
    assert feed_rate(SaturationWatch("rate", 20.0), 20.0, 10.0, 6) is not None
    # Too short to say: no verdict before min_windows.
    assert feed_rate(SaturationWatch("rate", 400.0, SaturationRule(min_windows=6)), 400.0, 222.2, 1.2) is None


def test_saturation_rule_concurrency_mode_rising_ttft_flat_throughput():
    w = SaturationWatch("concurrency")
    why = None
    for i in range(2000):
        t_done = i * 0.005  # 200 completions/s, flat
        why = w.observe(int((t_done - 0.01) * 1e9), int(t_done * 1e9), 0.01 + 0.02 * t_done) or why
    assert why is not None and "TTFT rose" in why
    w = SaturationWatch("concurrency")
    assert not any(w.observe(int(i * 5e6), int(i * 5e6 + 1e7), 0.01) for i in range(2000))


# ---- against the emulator's load model --------------------------------------------------------


@pytest.mark.timing
def test_search_finds_the_emulators_constant_rate_capacity(tmp_path: Path):
    """--max-batch 8, TTFT 5 ms, 1 ms between tokens, 32 tokens: 8 / 0.036 s = 222.2 req/s."""
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=5, itl_us=1000, max_batch=8) as emu:
        p = subprocess.run(
            [sys.executable, "-m", "pytps", "sweep", "--base-url", emu.base_url, "--search", "rate",
             "--slo-run", "ttft:p90=0.1", "--output-tokens", "32", "--input-tokens", "16", "--arrival", "constant",
             "--search-probe-s", "6", "--out", str(tmp_path / "s")],  # fmt: skip
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    index = json.loads((tmp_path / "s" / "sweep.json").read_text())
    cap = index["search"]["capacity"]
    assert cap["low"] <= 222.2 <= cap["high"] and cap["width"] <= 0.05, (cap, p.stderr)
    assert index["search"]["runs"] <= 10
    assert "capacity:" in p.stdout


def test_search_keys_are_documented_and_written():
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    documented = set(re.findall(r"^\|\s*`search\.([^`]+)`", doc, re.M))
    run_probe, _ = model_server(100.0)
    out = CapacitySearch("rate", run_probe, {"ttft:p90": 0.1}).run()
    written: set[str] = set()

    def walk(value, prefix):
        if prefix:
            written.add(prefix)
        if prefix in {"slo_run", "probes[].checks", "probes[].deciding", "capacity.low_deciding",
                      "capacity.high_deciding", "probes[].dirs"}:  # fmt: skip
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{prefix}.{k}" if prefix else k)
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{prefix}[]")

    walk(out, "")
    written = {w for w in written if not w.endswith("[]")}
    assert written == documented, (written - documented, documented - written)


def feed_batch(rate: float, seconds: float, slots: int = 8, service_s: float = 0.036, seed: int = 0) -> str | None:
    """Constant arrivals into a server of `slots` slots, each request holding one for service_s (the
    emulator's --max-batch model: 8 / 0.036 s = 222.2 req/s), finishes jittered by up to 1 ms."""
    import heapq

    rng = np.random.default_rng(seed)
    free = [0.0] * slots
    done = []
    for i in range(int(rate * seconds)):
        t = i / rate
        start = max(t, heapq.heappop(free))
        end = start + service_s
        heapq.heappush(free, end)
        done.append((end + rng.uniform(0, 0.001), t))
    watch = SaturationWatch("rate", rate)
    for _, t in done:
        watch.arrived(int(t * 1e9))
    why = None
    for end, t in sorted(done):
        why = watch.observe(int(t * 1e9), int(end * 1e9), end - t) or why
    return why


@pytest.mark.parametrize("seed", range(5))
def test_saturation_rule_on_a_batch_server_near_its_capacity(seed):
    assert feed_batch(215.0, 5, seed=seed) is None  # 97% of capacity: the saw-tooth is not growth
    assert feed_batch(222.0, 5, seed=seed) is None  # at capacity
    assert feed_batch(228.0, 5, seed=seed) is not None  # 2.6% past it: 6 more each second


def test_cli_search_writes_its_probes_and_refuses_a_load_flag(tmp_path: Path):
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=2, itl_us=500, max_batch=4) as emu:
        base = [sys.executable, "-m", "pytps", "sweep", "--base-url", emu.base_url, "--search", "rate",
                "--slo-run", "ttft:p90=0.5", "--output-tokens", "8", "--arrival", "constant", "--search-probe-s", "1"]  # fmt: skip
        bad = subprocess.run([*base, "--rate", "5"], capture_output=True, text=True)
        p = subprocess.run([*base, "--search-start", "20", "--search-max-probes", "2", "--out", str(tmp_path / "s")],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert bad.returncode == 2 and "leave out --rate" in bad.stderr
    assert p.returncode == 0, p.stderr
    index = json.loads((tmp_path / "s" / "sweep.json").read_text())
    search = index["search"]
    assert search["runs"] == 2 and [x["load"] for x in search["probes"]][0] == 20
    assert all((tmp_path / "s" / d).is_dir() for x in search["probes"] for d in x["dirs"])
    assert [c["values"]["rate"] for c in index["cells"]] == sorted(x["load"] for x in search["probes"])
    assert "capacity:" in p.stdout


def test_matrix_workload_can_ask_for_a_search(tmp_path: Path):
    cfg = tmp_path / "bench.toml"
    cfg.write_text(
        '[[endpoint]]\nname = "emu"\nemulator = { ttft_ms = 2, itl_us = 500, max_batch = 4 }\n'
        '[[workload]]\nname = "cap"\noutput_tokens = 8\narrival = "constant"\nsearch_probe_s = 1\n'
        'search = "rate"\nsearch_start = 20\nsearch_max_probes = 2\n'
    )
    p = subprocess.run([sys.executable, "-m", "pytps", "sweep", "-c", str(cfg), "--out", str(tmp_path / "m")],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr
    cell = json.loads((tmp_path / "m" / "matrix.json").read_text())["cells"][0]
    assert cell["status"] == "done" and cell["capacity"]["low"] is not None
    run = subprocess.run([sys.executable, "-m", "pytps", "run", "-c", str(cfg)], capture_output=True, text=True)
    assert run.returncode == 2 and "search is `pytps sweep -c`'s" in run.stderr


def test_the_sweep_page_draws_the_probes_and_the_bracket(tmp_path: Path):
    pytest.importorskip("bokeh")
    from pytps.emulator import Emulator

    with Emulator(ttft_ms=2, itl_us=500, max_batch=4) as emu:
        p = subprocess.run(
            [sys.executable, "-m", "pytps", "sweep", "--base-url", emu.base_url, "--search", "rate",
             "--slo-run", "ttft:p90=0.5", "--output-tokens", "8", "--arrival", "constant", "--search-probe-s", "1",
             "--search-start", "20", "--search-max-probes", "2", "--out", str(tmp_path / "s"),
             "--html", str(tmp_path / "s.html")],  # fmt: skip
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "s.html").read_text()
    assert "Capacity search" in html and "capacity search: the probes" in html
    index = json.loads((tmp_path / "s" / "sweep.json").read_text())
    # The verdict cell carries its verdict's class (report/verdicts.py: a failed probe is a regression's red).
    from pytps.report.verdicts import PROBE_CLASSES

    status = index["search"]["probes"][0]["status"]
    assert f'<td class="{PROBE_CLASSES[status]}">{status}</td>' in html
