"""`pytps rank` from the command line (docs/rank.md): a TOML matrix of emulators ranked with its
console table, Markdown, rank.json and HTML page; `--every 2s --for 10s` recording 5 rounds in the
results store, a monitor killed after round 3 resumed at round 4 with --resume, and
`pytps history check` reading the rank rounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

MATRIX = """
[defaults]
tasks = "arithmetic"
output_tokens = 2
requests = {requests}
concurrency = 8

[[endpoint]]
name = "fast"
emulator = {{ttft_ms = 2, itl_us = 20, answer_accuracy = 0.9, seed = 1, port = {port_a}}}

[[endpoint]]
name = "slow"
emulator = {{ttft_ms = 12, itl_us = 20, answer_accuracy = 0.9, seed = 2, port = {port_b}}}

[[workload]]
name = "graded"
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _matrix(requests: int, fixed_ports: bool = False) -> str:
    """The matrix; fixed_ports: each emulator on one port in every round, as a real endpoint keeps
    its URL (the store groups runs by endpoint)."""
    a, b = (_free_port(), _free_port()) if fixed_ports else (0, 0)
    return MATRIX.format(requests=requests, port_a=a, port_b=b)


def _pytps(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "220"}
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, env=env, **kw)  # type: ignore[call-overload, no-any-return]


def test_rank_writes_every_report(tmp_path: Path) -> None:
    pytest.importorskip("bokeh")
    (tmp_path / "rank.toml").write_text(_matrix(60))
    out = tmp_path / "out"
    done = _pytps("rank", "-c", str(tmp_path / "rank.toml"), "--out", str(out), "--markdown", str(tmp_path / "r.md"),
                  "--html", "--min-accuracy", "0.5", "--store", str(tmp_path / "h.sqlite"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "blocks" in done.stderr  # one host: ABBA blocks by default
    for column in ("rank", "endpoint", "accuracy [95% CI]", "time to a correct answer p50", "errors"):
        assert column in done.stdout
    assert "rank 1: fast" in done.stdout and "rank 2: slow" in done.stdout
    data = json.loads((out / "rank.json").read_text())
    assert data["interleave"] == "blocks" and len(data["rounds"]) == 1 and data["complete"]
    assert [e["name"] for e in data["rounds"][0]["verdict"]["endpoints"]] == ["fast", "slow"]
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("## pytps rank: time to a correct answer p50") and "| 1 | fast" in md
    html = (out / "rank.html").read_text()
    assert "Pairwise differences" in html and "Pareto" in html
    assert (out / "fast" / "requests.jsonl").is_file() and (out / "slow" / "results.json").is_file()


def test_bad_endpoints_are_one_line(tmp_path: Path) -> None:
    done = _pytps("rank", "--endpoint", "a=http://127.0.0.1:9", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "at least two endpoints" in done.stderr and "Traceback" not in done.stderr
    done = _pytps("rank", "--endpoint", "http://127.0.0.1:9", "--endpoint", "b=http://127.0.0.1:9")
    assert done.returncode == 2 and "NAME=URL" in done.stderr


def _rounds(path: Path) -> int:
    try:
        return len(json.loads(path.read_text())["rounds"])
    except (OSError, ValueError, KeyError):
        return 0


def test_a_monitor_records_5_rounds_and_resumes_at_round_4_after_a_kill(tmp_path: Path) -> None:
    (tmp_path / "rank.toml").write_text(_matrix(24, fixed_ports=True))
    out, store = tmp_path / "monitor", tmp_path / "h.sqlite"
    cmd = ["rank", "-c", str(tmp_path / "rank.toml"), "--out", str(out), "--store", str(store),
           "--every", "2s", "--for", "10s"]  # fmt: skip
    env = {**os.environ, "COLUMNS": "220"}
    proc = subprocess.Popen([sys.executable, "-m", "pytps", *cmd], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while _rounds(out / "rank.json") < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _rounds(out / "rank.json") == 3, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGKILL)  # killed: no chance to tidy up
        proc.wait()
    assert not json.loads((out / "rank.json").read_text())["complete"]
    done = _pytps(*cmd, "--resume", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "round 4/5" in done.stderr and "round 3/5" not in done.stderr
    data = json.loads((out / "rank.json").read_text())
    assert [r["round"] for r in data["rounds"]] == [1, 2, 3, 4, 5] and data["complete"]
    assert [r for r in data["over_rounds"]["fast"]["rank"]] == [1, 1, 1, 1, 1]
    assert "rank per round" in done.stdout
    # Every round of every endpoint is a row of the store, kind "rank", and history check reads them.
    from pytps.store.store import Store

    with Store(str(store)) as s:
        rows = s.runs(kinds=("rank",))
    assert len(rows) == 10 and {r.folder.rsplit("/", 1)[-1] for r in rows} == {"fast", "slow"}
    assert all("rank" in r.figures and "accuracy" in r.figures for r in rows)
    check = _pytps("history", "check", "--store", str(store), "--metric", "ttft_p50", "--max-change", "300%")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "nothing to check" not in check.stderr and check.stderr.count("ok: ") == 2


def test_the_objective_choices_are_the_reports_objectives() -> None:
    """--objective's choices are spelled in the settings (so the parser loads no report module):
    they are the report's objectives, in its order."""
    from pytps.report.rank_objectives import OBJECTIVES
    from pytps.settings.commands import OBJECTIVE_NAMES

    assert OBJECTIVE_NAMES == tuple(OBJECTIVES)
