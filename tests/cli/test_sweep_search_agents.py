"""`pytps sweep --search agents` (issue 35: sustained agents): the capacity search over N concurrent
agents, the same code path as `pytps agents --search` (pytps.app.agent_search), with its probes
said, its answer in agents_search.json and the store, and with --server-metrics on the emulator's
power model, agents per kilowatt at the found capacity."""

from __future__ import annotations

import json

import pytest

import pytps
from pytps.cli import main

WORK = "synthetic:turns=2-3,context=2000,count=4,tool_s=0.001,output=20"


def test_sweep_search_agents_says_probes_and_gives_agents_per_kw(tmp_path, capsys):
    idle_w, per_stream_w = 60.0, 15.0
    # TTFT 50 ms: a busy machine's few ms of jitter stay within the recheck's 10% (the search's stability rule)
    with pytps.Emulator(ttft_ms=50.0, itl_us=200.0, power_idle_w=idle_w, power_per_stream_w=per_stream_w) as emu:
        code = main(["sweep", "--base-url", emu.base_url, "--search", "agents", "--search-agents", WORK,
                     "--slo-run", "ttft:p99=30", "--search-max-probes", "3", "--server-metrics",
                     "--server-metrics-interval", "0.05", "--out", str(tmp_path / "s"),
                     "--store", str(tmp_path / "h.sqlite")])  # fmt: skip
    assert code == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    said = [x for x in err.splitlines() if x.startswith("pytps sweep: probe ")]
    assert said[0].startswith("pytps sweep: probe 1: agents 1: pass")
    assert said[1].startswith("pytps sweep: probe 2: agents 2")
    answer = json.loads((tmp_path / "s" / "agents_search.json").read_text())
    assert answer["unit"] == "agents" and answer["workload"] == WORK
    assert [p["load"] for p in answer["probes"]][:2] == [1, 2]
    n = answer["capacity"]["low"]
    if answer.get("unstable"):  # the search's stability rule, on a machine too busy for it
        assert answer["power"]["agents_per_kw"] is None and "agents per kW: unknown" in lines[-1]
        pytest.skip("the machine moved TTFT by over 10% between probe 1 and its recheck: no capacity to divide")
    assert n == 2 and lines[-1].startswith("capacity: above 2 concurrent agents")
    power = answer["power"]
    # The model's power is idle + per stream x requests holding a slot: between idle and idle + N x per stream.
    assert idle_w <= power["power_w"] <= idle_w + n * per_stream_w
    assert power["agents_per_kw"] == pytest.approx(n / (power["power_w"] / 1000))
    assert n / ((idle_w + n * per_stream_w) / 1000) <= power["agents_per_kw"] <= n / (idle_w / 1000)
    assert "agents per kW" in lines[-1]
    from pytps.store.store import Store

    with Store(str(tmp_path / "h.sqlite")) as store:
        [row] = store.runs()
    assert row.kind == "agents_search"
    assert row.figures["agents_per_kw"] == pytest.approx(power["agents_per_kw"])


def test_sweep_search_agents_refuses_a_fixed_load(capsys):
    code = main(["sweep", "--base-url", "http://127.0.0.1:9", "--search", "agents", "--concurrency", "4",
                 "--slo-run", "ttft:p99=1"])  # fmt: skip
    assert code != 0
    err = capsys.readouterr().err
    assert "--concurrency" in err and len(err.strip().splitlines()) == 1


@pytest.mark.timing  # a busy machine moves TTFT by tens of ms: the bracket needs a quiet one
def test_sweep_search_agents_finds_the_load_models_capacity(tmp_path, capsys):
    # The emulator's load model: a turn is ~350 ms (TTFT 50 ms, then 60 tokens 5 ms apart) and at
    # most 8 requests hold a batch slot; past 8 agents (with ~no tool time) a turn waits for a slot,
    # up to a whole turn, so TTFT p99 jumps from 50 ms to hundreds: the capacity is 8 agents.
    with pytps.Emulator(ttft_ms=50.0, itl_us=5000.0, max_batch=8, prefix_cache_tokens=10_000_000) as emu:
        code = main(["sweep", "--base-url", emu.base_url, "--search", "agents",
                     "--search-agents", "synthetic:turns=4-6,context=4000,count=8,tool_s=0.005,output=60",
                     "--slo-run", "ttft:p99=0.15", "--search-max-probes", "10", "--out", str(tmp_path / "s"),
                     "--no-store"])  # fmt: skip
    assert code == 0
    out, err = capsys.readouterr()
    assert "probe 1: agents 1: pass" in err and "concurrent agents" in out
    cap = json.loads((tmp_path / "s" / "agents_search.json").read_text())["capacity"]
    assert cap["low"] is not None and cap["high"] is not None
    assert cap["low"] <= 8 <= cap["high"]
