"""`pytps agents` end to end against the emulator: the run's files, the Chrome trace, one-line
errors, and the search for sustained agents (issue 35: the bracket holds the emulator's load
model's capacity: with no tool time, `max_batch` agents are served without queueing)."""

from __future__ import annotations

import json

import pytest

import pytps
from pytps.cli import main


def test_run_writes_rows_and_trace(tmp_path, capsys):
    with pytps.Emulator(ttft_ms=2.0, itl_us=100.0, prefix_cache_tokens=1_000_000) as emu:
        code = main(["agents", emu.base_url, "--agents", "3", "--agents", "synthetic:turns=3-4,context=3000,count=4,tool_s=0.01",
                     "--slo", "ttft=1", "--out", str(tmp_path), "--html", str(tmp_path / "a.html"),
                     "--store", str(tmp_path / "h.sqlite")])  # fmt: skip
    assert code == 0
    from pytps.store.store import Store

    with Store(str(tmp_path / "h.sqlite")) as store:
        [row] = store.runs()
    assert row.kind == "agents" and row.api == "openai-chat" and len(row.fingerprint) > 6
    page = (tmp_path / "a.html").read_text()
    assert "TTFT against the turn" in page and "tool waits" in page
    out = capsys.readouterr().out
    assert "agents: 4 (replay), 4 finished" in out and "turns meeting the SLO    100.0%" in out
    doc = json.loads((tmp_path / "agents.json").read_text())
    assert doc["fingerprint"]["kind"] == "agents" and len(doc["agents"]) == 4
    turns = [json.loads(x) for x in (tmp_path / "turns.jsonl").read_text().splitlines()]
    assert len(turns) == doc["summary"]["turns"]
    trace = json.loads((tmp_path / "agents_trace.json").read_text())["traceEvents"]
    slices = [e for e in trace if e["ph"] == "X"]
    assert sum(1 for e in slices if e["name"].startswith("turn ")) == len(turns)
    assert sum(1 for e in slices if e["name"] == "tool wait") == len(turns) - 4
    assert {e["tid"] for e in slices} == {0, 1, 2, 3}


@pytest.mark.parametrize(
    "argv, word",
    [(["--agents", "synthetic:size=2"], "unknown key"), (["--live", "tasks:nope:3"], "not a built-in task set"),
     (["--agents", "example", "--search"], "--slo-run"), (["--agents", "example", "--slo", "ttft=-1"], "positive"),
     (["--agents", "a.jsonl", "--agents", "b.jsonl"], "two workloads")],
)
def test_bad_settings_are_one_line(argv, word, capsys):
    code = main(["agents", "http://127.0.0.1:9", *argv])
    assert code != 0
    err = capsys.readouterr().err
    assert word in err and len(err.strip().splitlines()) == 1


def test_search_says_its_probes_and_writes_them(tmp_path, capsys):
    # TTFT 50 ms: a busy machine's few ms of jitter stay within the recheck's 10% (the search's stability rule)
    with pytps.Emulator(ttft_ms=50.0, itl_us=200.0) as emu:
        code = main(["agents", emu.base_url, "--agents", "synthetic:turns=2-3,context=2000,count=4,tool_s=0.001,output=20",
                     "--search", "--slo-run", "ttft:p99=30", "--search-max-probes", "3", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [line for line in out if line.startswith("probe ")][:2]
    assert out[0].startswith("probe 1: agents 1: pass") and out[1].startswith("probe 2: agents 2: pass")
    assert out[2].startswith("recheck: agents 1: pass")  # the search's rule: the first probe run again
    # The search's own answer: a capacity, or (a busy machine moved TTFT by over 10% between probe 1
    # and its recheck) "the server is unstable": both are its rules at work.
    assert out[-1].startswith(("capacity: above 2 concurrent agents", "the server is unstable: at 1 concurrent agents"))
    search = json.loads((tmp_path / "agents_search.json").read_text())
    assert [p["load"] for p in search["probes"]] == [1, 2, 1] and search["unit"] == "agents"


@pytest.mark.timing  # a busy machine moves TTFT by tens of ms: the bracket needs a quiet one
def test_search_finds_the_load_models_capacity(tmp_path, capsys):
    # A turn is ~350 ms (TTFT 50 ms, then 60 tokens 5 ms apart): past 8 agents a turn waits for a
    # slot, up to a whole turn, so TTFT p99 jumps from 50 ms to hundreds; 150 ms leaves a busy
    # machine ample room at 8 and below.
    with pytps.Emulator(ttft_ms=50.0, itl_us=5000.0, max_batch=8, prefix_cache_tokens=10_000_000) as emu:
        code = main(["agents", emu.base_url, "--agents", "synthetic:turns=4-6,context=4000,count=8,tool_s=0.005,output=60",
                     "--search", "--slo-run", "ttft:p99=0.15", "--search-max-probes", "10", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "probe 1: agents 1: pass" in out and "concurrent agents" in out
    cap = json.loads((tmp_path / "agents_search.json").read_text())["capacity"]
    assert cap["low"] is not None and cap["high"] is not None
    assert cap["low"] <= 8 <= cap["high"]
