"""`pytps serve` as the served command: the reset preset between cells (the emulator's truth),
start-up figures against the emulator's own first accepted connection, and capacity brackets
against the load model's capacity."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PY = sys.executable


def pytps_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("reset", [True, False])
def test_reset_preset_makes_the_second_cell_start_cold(tmp_path: Path, reset: bool) -> None:
    truth = tmp_path / "truth.jsonl"
    serve = (
        f"{PY} -m pytps serve --port {{port}} --ttft-ms 1 --itl-us 100 --prefix-cache-tokens 100000 "
        f"--truth-log {truth}"
    )
    hook = ["--before-cell", "reset:vllm"] if reset else []
    r = pytps_cli(
        "sweep", "--serve", serve, *hook, "--concurrency", "1,2", "--requests", "8", "--warmup", "0",
        "--input-tokens", "512", "--shared-prefix-tokens", "256", "--output-tokens", "4",
        "--out", str(tmp_path / "o"), "--no-store",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    cached = [rec["cached_tokens"] for rec in records if rec.get("prompt_tokens", 0) > 100]  # not the first-token probe
    assert len(cached) == 16
    first_of_second_cell = cached[8]
    assert cached[0] == 0
    if reset:
        assert first_of_second_cell == 0, cached
        assert r.stderr.count("reset:vllm: POST /reset_prefix_cache 200") == 2
    else:
        assert first_of_second_cell > 0, cached


@pytest.mark.timing
def test_ready_agrees_with_the_emulators_first_accepted_connection(tmp_path: Path) -> None:
    serve = f"{PY} -m pytps serve --port {{port}} --ttft-ms 5"
    r = pytps_cli("run", "--serve", serve, "--serve-starts", "5", "--requests", "4", "--out", str(tmp_path), "--no-store")
    assert r.returncode == 0, r.stderr
    facts = json.loads((tmp_path / "server.json").read_text())
    starts = [facts["startup"]["cold"], *facts["startup"]["warm_starts"]]
    log = (tmp_path / "server.log").read_text()
    accepts = [int(x) for x in re.findall(r"first connection accepted at (\d+) ns", log)]
    assert len(accepts) == len(starts) == 6
    for start, accept in zip(starts, accepts, strict=True):
        assert start["listening_s"] <= start["ready_s"] <= start["first_token_s"]
        assert abs(start["ready_ns"] - accept) < 2_000_000, (start, accept)
    warm = facts["startup"]["warm"]
    assert warm["n"] == 5 and warm["ready_s"]["p50"] > 0


@pytest.mark.timing
@pytest.mark.xfail(
    strict=False,
    reason="issue 38, open: not yet run on a quiet machine against the load model's capacity as the search "
    "defines it (pytps.sweep.load_model); under load the emulator's TTFT carries the host's delays",
)
def test_each_bracket_contains_the_load_models_capacity(tmp_path: Path) -> None:
    # 8 slots, each request 5 or 20 ms to its first token then 31 gaps of 1 ms. The capacity is the
    # search's, computed on the load model (docs/tuning.md, "The load model's capacity"): the same
    # Poisson schedule (seed 0) through 8 FIFO slots, judged by the search's own verdict. Not
    # 8 / service time: a 4 s probe starting empty passes above that rate (224 req/s against 222).
    from pytps.runner.schedule import iter_arrival_offsets_ns
    from pytps.sweep.load_model import LoadModel, capacity_between, probe_arrivals, probe_verdict

    serve = f"{PY} -m pytps serve --port {{port}} --ttft-ms {{ttft_ms}} --itl-us 1000 --max-batch 8"
    r = pytps_cli(
        "sweep", "--serve", serve, "--serve-grid", "ttft_ms=5,20", "--search", "rate", "--slo-run", "ttft:p90=0.2",
        "--output-tokens", "32", "--input-tokens", "64", "--search-probe-s", "4", "--out", str(tmp_path), "--no-store",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    index = json.loads((tmp_path / "tuning.json").read_text())

    def arrivals(rate: float) -> Iterator[int]:
        return iter_arrival_offsets_ns(rate, seed=0)  # the run's schedule: --seed 0, the default

    for entry in index["configurations"]:
        model = LoadModel(slots=8, ttft_ns=int(entry["values"]["ttft_ms"]) * 1_000_000, itl_ns=1_000_000,
                          output_tokens=32)  # fmt: skip
        search = json.loads((tmp_path / entry["dir"] / "sweep.json").read_text())["search"]
        cap = entry["capacity"]
        assert cap["low"] is not None and cap["high"] is not None, (entry["name"], cap)
        probes = {p["load"]: p for p in search["probes"] if not p["recheck"]}
        # The emulator's verdict at each end of the bracket is the load model's at that load.
        for load, passes in ((cap["low"], True), (cap["high"], False)):
            p = probes[load]
            status, deciding = probe_verdict(
                model, probe_arrivals(arrivals, load, p["seconds"]), load, search["slo_run"], runs=p["runs"]
            )
            assert (status == "pass") == passes, (entry["name"], load, p["status"], p["deciding"], status, deciding)
        capacity = capacity_between(model, arrivals, probes[cap["high"]]["seconds"], search["slo_run"], cap["low"],
                                    cap["high"])  # fmt: skip
        assert cap["low"] <= capacity <= cap["high"], (entry["name"], cap, capacity)
    assert [r["name"] for r in index["ranking"]] == ["ttft_ms=5", "ttft_ms=20"]


def test_served_runs_are_stored_with_the_startup(tmp_path: Path) -> None:
    import sqlite3

    store = tmp_path / "store.sqlite"
    serve = f"{PY} -m pytps serve --port {{port}} --ttft-ms {{t}}"
    r = pytps_cli(
        "sweep", "--serve", serve, "--serve-grid", "t=2,5", "--serve-starts", "2", "--concurrency", "1,2",
        "--requests", "6", "--out", str(tmp_path / "o"), "--store", str(store),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(store)
    assert db.execute("SELECT kind, COUNT(*) FROM runs GROUP BY kind").fetchall() == [("sweep_cell", 4)]
    names = {n for (n,) in db.execute("SELECT DISTINCT name FROM figures WHERE name LIKE 'server_%'")}
    assert {"server_listening_s", "server_ready_s", "server_first_token_s", "server_ready_warm_p90_s"} <= names
    per_run = db.execute("SELECT COUNT(*) FROM figures WHERE name = 'server_ready_s'").fetchone()
    assert per_run == (4,)


def test_hooks_without_serve_act_on_the_endpoint_between_cells(tmp_path: Path) -> None:
    marker = tmp_path / "after.txt"
    r = pytps_cli(
        "sweep", "--before-cell", "reset:vllm", "--after-cell", f"{PY} -c \"open('{marker}', 'a').write('x')\"",
        "--concurrency", "1,2,4", "--requests", "4", "--out", str(tmp_path / "o"), "--no-store",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("reset:vllm: POST /reset_prefix_cache 200") == 3
    assert marker.read_text() == "xxx"
