"""Connection ids in the journal (every transport), and `pytps report DIR --trace FILE`: real runs
against pytps.Emulator, the trace checked against the Trace Event Format's documented fields."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytps
from pytps.cli import main
from pytps.results.folder import load_journal

TRANSPORTS = ("asyncio", "httpx", "native")

# The Trace Event Format (JSON object form): the keys each phase type needs.
REQUIRED = {
    "X": {"name", "ph", "ts", "dur", "pid", "tid"},  # complete event
    "i": {"name", "ph", "ts", "pid", "tid", "s"},  # instant event
    "M": {"name", "ph", "pid", "tid", "args"},  # metadata event
}
METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}
EPS_US = 0.002  # ts and dur are each rounded to the ns


def run_dir(emu: pytps.Emulator, out: Path, transport: str, **settings: Any) -> Path:
    settings = {"requests": 8, "output_tokens": 8, "input_tokens": 16, "concurrency": 2, **settings}
    pytps.run(emu.base_url, transport=transport, out=out, **settings)
    return out


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_requests_on_one_kept_alive_connection_share_its_id(transport: str, tmp_path: Path) -> None:
    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        lines = load_journal(run_dir(emu, tmp_path / "out", transport, warmup=1))
    assert len(lines) == 9
    ids = [line["connection_id"] for line in lines]
    assert all(isinstance(i, int) for i in ids), ids
    # Concurrency 2 over keep-alive: two connections at most, each opened by the request that
    # paid for its connect, and its requests one after another.
    assert 1 <= len(set(ids)) <= 2
    openers = [line for line in lines if "connect" in line["phases_ns"]]
    assert len(openers) == len(set(ids))
    by_conn: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        by_conn[line["connection_id"]].append(line)
    for conn_lines in by_conn.values():
        conn_lines.sort(key=lambda line: line["t_send_ns"])
        assert "connect" in conn_lines[0]["phases_ns"]
        assert not any("connect" in line["phases_ns"] for line in conn_lines[1:])
        for a, b in zip(conn_lines, conn_lines[1:]):
            assert a["t_done_ns"] <= b["t_send_ns"]
    assert len(lines) > len(set(ids))  # the connections were reused


def check_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """Validates against the format's documented fields; returns the events sorted by type."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit", "metadata"}
    assert trace["displayTimeUnit"] in ("ms", "ns")
    assert isinstance(trace["metadata"], dict)
    out: dict[str, list[dict[str, Any]]] = {"X": [], "i": [], "M": []}
    for ev in trace["traceEvents"]:
        assert ev["ph"] in REQUIRED, ev
        missing = REQUIRED[ev["ph"]] - ev.keys()
        assert not missing, (missing, ev)
        assert isinstance(ev["name"], str) and ev["name"]
        for key in ("pid", "tid"):
            assert isinstance(ev[key], int) and not isinstance(ev[key], bool), ev
        for key in ("ts", "dur"):
            if key in ev:
                v = ev[key]
                assert isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0, ev
        if "args" in ev:
            assert isinstance(ev["args"], dict)
        if ev["ph"] == "i":
            assert ev["s"] in ("g", "p", "t")
        if ev["ph"] == "M":
            assert ev["name"] in METADATA_NAMES
            assert ("sort_index" if ev["name"].endswith("sort_index") else "name") in ev["args"]
        out[ev["ph"]].append(ev)
    # Slices on one thread nest: each lies inside, or wholly after, the ones open before it.
    by_tid: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for ev in out["X"]:
        by_tid[ev["tid"]].append(ev)
    for evs in by_tid.values():
        stack: list[float] = []  # ends of the open slices
        for ev in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while stack and ev["ts"] >= stack[-1] - EPS_US and not (ev["ts"] + ev["dur"] <= stack[-1] + EPS_US):
                stack.pop()
            if stack:
                assert ev["ts"] + ev["dur"] <= stack[-1] + EPS_US, ("slices overlap without nesting", ev)
            stack.append(ev["ts"] + ev["dur"])
    return out


def within(inner_ts: float, inner_dur: float, outer: dict[str, Any]) -> bool:
    return outer["ts"] - EPS_US <= inner_ts and inner_ts + inner_dur <= outer["ts"] + outer["dur"] + EPS_US


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "run"
    with pytps.Emulator(ttft_ms=3, itl_us=400, reasoning_tokens=2) as emu:
        return run_dir(emu, out, "native", requests=6, warmup=1)


def write_trace_cli(run: Path, out: Path, *extra: str) -> dict[str, Any]:
    assert main(["report", str(run), "--trace", str(out), *extra]) == 0
    trace: dict[str, Any] = json.loads(out.read_text())
    return trace


def test_trace_of_a_run(saved_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace_cli(saved_run, tmp_path / "run.trace.json")
    assert "run.trace.json" in capsys.readouterr().out
    ev = check_trace(trace)
    lines = {line["index"]: line for line in load_journal(saved_run)}
    npz = np.load(saved_run / "events.npz")

    # One track per connection id, named after it; each request on its connection's track.
    names = {e["tid"]: e["args"]["name"] for e in ev["M"] if e["name"] == "thread_name"}
    conn_ids = {line["connection_id"] for line in lines.values()}
    assert sorted(names.values()) == sorted(f"connection {c}" for c in conn_ids)
    requests = {e["args"]["index"]: e for e in ev["X"] if e["cat"] == "request"}
    assert requests.keys() == lines.keys()
    for index, slice_ in requests.items():
        assert names[slice_["tid"]] == f"connection {lines[index]['connection_id']}"
        assert slice_["args"]["warmup"] == lines[index]["warmup"]

    # Phases: inside their request's slice, on its track; TTFT and decode as the journal has them.
    phases: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for e in ev["X"]:
        if e["cat"] == "phase":
            req = requests[e["args"]["request"]]
            assert e["tid"] == req["tid"]
            assert within(e["ts"], e["dur"], req), (e, req)
            phases[e["args"]["request"]][e["name"]] = e
    for index, line in lines.items():
        p = phases[index]
        assert {"TTFT", "decode", "wait_headers"} <= p.keys()
        assert ("connect" in p) == ("connect" in line["phases_ns"])
        assert p["TTFT"]["dur"] == pytest.approx(line["ttft_s"] * 1e6, abs=0.002)
        assert p["decode"]["dur"] == pytest.approx((line["last_output_ns"] - line["first_output_ns"]) / 1e3, abs=0.002)
        assert within(p["wait_headers"]["ts"], p["wait_headers"]["dur"], p["TTFT"])
        if "connect" in p:
            assert p["connect"]["dur"] == pytest.approx(line["phases_ns"]["connect"] / 1e3, abs=0.002)
            assert p["connect"]["ts"] + p["connect"]["dur"] <= p["TTFT"]["ts"] + EPS_US

    # An instant per events.npz row, on its request's track and inside its slice, with its tokens.
    instants = ev["i"]
    assert len(instants) == len(npz["t_ns"]) == trace["metadata"]["output_events"]
    got: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for e in instants:
        req = requests[e["args"]["request"]]
        assert e["tid"] == req["tid"] and within(e["ts"], 0, req)
        got[e["args"]["request"]].append((e["args"]["tokens"], e["args"]["kind"]))
    kinds = {pytps.KIND_CONTENT: "content", pytps.KIND_REASONING: "reasoning", pytps.KIND_TOOL: "tool"}
    want: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for r, tokens, kind in zip(npz["request_index"], npz["tokens"], npz["kind"], strict=True):
        want[int(r)].append((int(tokens), kinds[int(kind)]))
    assert got == want
    assert {k for _, k in got[1]} == {"content", "reasoning"}

    # Time 0 is the first request's start (its connect): nothing is before it.
    origin = trace["metadata"]["origin_monotonic_ns"]
    first = min(lines.values(), key=lambda line: line["t_send_ns"])
    assert origin == first["t_send_ns"] - sum(first["phases_ns"].get(k, 0) for k in ("connect", "tls", "send"))
    assert min(e["ts"] for e in ev["X"]) == 0


def test_trace_max_requests_samples_evenly(saved_run: Path, tmp_path: Path) -> None:
    trace = write_trace_cli(saved_run, tmp_path / "t.json", "--trace-max-requests", "3")
    ev = check_trace(trace)
    meta = trace["metadata"]
    assert meta["sampled"] and meta["requests_in_run"] == 7 and meta["requests_in_trace"] == 3
    assert "sampled" in meta["note"]
    kept = {e["args"]["index"] for e in ev["X"] if e["cat"] == "request"}
    assert kept == {0, 3, 6}
    assert {e["args"]["request"] for e in ev["i"]} == kept


def test_requests_without_connection_ids_go_on_lanes_that_nest(saved_run: Path, tmp_path: Path) -> None:
    """A run saved before connection ids (schema 4), or HTTP/2 requests sharing one connection:
    overlapping requests never share a track."""
    for variant, conn_id in (("no_ids", None), ("one_conn", 7)):
        run = tmp_path / variant
        run.mkdir()
        for name in ("results.json", "events.npz"):
            (run / name).write_bytes((saved_run / name).read_bytes())
        with open(saved_run / "requests.jsonl") as src, open(run / "requests.jsonl", "w") as dst:
            for raw in src:
                line = json.loads(raw)
                if conn_id is None:
                    del line["connection_id"]
                else:
                    line["connection_id"] = conn_id
                dst.write(json.dumps(line) + "\n")
        trace = write_trace_cli(run, tmp_path / f"{variant}.json")
        ev = check_trace(trace)
        names = [e["args"]["name"] for e in ev["M"] if e["name"] == "thread_name"]
        assert len(names) == 2  # concurrency 2: two lanes
        assert all(("no connection id" in n) if conn_id is None else n.startswith("connection 7") for n in names)


def test_trace_names_a_folder_that_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path), "--trace", str(tmp_path / "t.json")]) == 2
    assert "results.json" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()
