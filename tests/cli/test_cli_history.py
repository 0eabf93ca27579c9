"""`pytps history` as a user runs it: runs recorded by `pytps run`, listed, trended, imported with
`history add`, pruned, and `history check` exiting 1 on a planted regression of the emulator's TTFT."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fault_servers import free_port

import pytps

RUN = ["--requests", "30", "--concurrency", "10", "--output-tokens", "8", "--input-tokens", "32", "--model", "m"]


def pytps_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def run_against(port: int, ttft_ms: float, out: Path, store: str, *extra: str) -> None:
    with pytps.Emulator(port=port, ttft_ms=ttft_ms, ttft_dist="normal", ttft_sd_ms=3.0, itl_us=300):
        pytps_cli("run", "--base-url", f"http://127.0.0.1:{port}", *RUN, "--out", str(out), "--store", store, "--json", *extra)


def test_runs_recorded_listed_trended_and_a_planted_regression_flagged(tmp_path: Path) -> None:
    store, port = str(tmp_path / "h.sqlite"), free_port()
    for i in range(3):
        run_against(port, 50.0, tmp_path / f"base{i}", store, "--seed", str(i))
    listed = pytps_cli("history", "--store", store).stdout
    assert f"http://127.0.0.1:{port}" in listed and "base2" in listed
    # TTFT only: the emulator's 0.3 ms TPOT, on a host running two test workers, moves by more than
    # 10% between runs for real (tests/report/test_history.py), and the check would rightly say so.
    ok = pytps_cli("history", "check", "--store", store, "--metric", "ttft_p50", "--max-change", "10%")
    # No regression: nothing on stdout; stderr has the check's line (`improvement:` when a loaded
    # machine made an earlier run slow enough that this one is significantly better).
    assert ok.stdout == "" and ("ok: ttft_p50" in ok.stderr or "improvement: ttft_p50" in ok.stderr), ok.stderr

    run_against(port, 60.0, tmp_path / "slow", store, "--seed", "9")  # the planted 20% regression
    bad = pytps_cli("history", "check", "--store", store, "--metric", "ttft_p50", check=False)
    assert bad.returncode == 1, bad.stderr
    (line,) = bad.stdout.strip().splitlines()
    assert line.startswith("REGRESSION ttft_p50 ") and "limit 10%" in line

    trend = pytps_cli("history", "--store", store, "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m").stdout
    assert "ttft_p50" in trend and "vs baseline" in trend
    rows = list(csv.DictReader(io.StringIO(pytps_cli("history", "--store", store, "--fingerprint", "", "--csv").stdout)))
    assert {r["metric"] for r in rows} >= {"ttft_p50", "decode_tps_p50"} and len({r["id"] for r in rows}) == 4
    limits = tmp_path / "limits.toml"
    # Generous limits: this checks that a limits file is read, not the machine's steadiness.
    limits.write_text('[limits]\nttft_p50 = "30%"\ndecode_tps_p50 = "50%"\n')
    assert pytps_cli("history", "check", "--store", store, "--limits", str(limits)).returncode == 0
    data = json.loads(pytps_cli("history", "check", "--store", store, "--json", check=False).stdout)
    assert data[0]["regression"] and data[0]["metric"] == "ttft_p50"


def test_history_add_imports_folders_and_prune_forgets_the_gone(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    port = free_port()
    for i in range(2):
        run_against(port, 5.0, tmp_path / "old" / f"r{i}", store, "--no-store")
    assert not Path(store).exists()  # --no-store: nothing recorded
    out = pytps_cli("history", "add", str(tmp_path / "old"), "--store", store).stdout
    assert out.startswith("2 runs added") and "0 already there" in out
    assert pytps_cli("history", "--store", store, "add", str(tmp_path / "old" / "r0")).stdout.startswith("0 runs added")
    shutil.rmtree(tmp_path / "old" / "r1")
    assert "1 forgotten" in pytps_cli("history", "add", "--prune", "--store", store).stdout
    assert "r0" in pytps_cli("history", "--store", store).stdout


def test_pytps_run_records_in_pytps_store_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "env.sqlite"
    monkeypatch.setenv("PYTPS_STORE", str(store))
    pytps_cli("run", "--requests", "3", "--concurrency", "1", "--output-tokens", "4", "--emu-ttft-ms", "2",
              "--out", str(tmp_path / "r"), "--json")  # fmt: skip
    rows = sqlite3.connect(store).execute("SELECT kind, status, folder FROM runs").fetchall()
    assert rows == [("run", "complete", str((tmp_path / "r").resolve()))]


def test_a_sweep_records_each_cell(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    pytps_cli("sweep", "--concurrency", "1,2", "--requests", "3", "--output-tokens", "4", "--emu-ttft-ms", "2",
              "--out", str(tmp_path / "sw"), "--store", store, "--json")  # fmt: skip
    kinds = sqlite3.connect(store).execute("SELECT kind FROM runs").fetchall()
    assert kinds == [("sweep_cell",), ("sweep_cell",)]
    assert "sweep_cell" in pytps_cli("history", "--store", store, "--all").stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["history", "--metric", "ttft_p42"], "unknown metric 'ttft_p42'"),
        (["history", "check", "--max-change", "lots"], "write a percentage"),
        (["history", "add"], "needs results folders"),
        (["history", "add", "/no/such/dir"], "no such folder"),
        (["history", "--store", "mysql://u:pw@h/db"], "unknown backend 'mysql'"),
    ],
)
def test_bad_input_is_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    out = pytps_cli(*args, check=False)
    assert out.returncode == 2 and says in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "pw" not in out.stderr


def test_a_newer_store_is_refused_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "new.sqlite"
    pytps_cli("history", "--store", str(store))
    conn = sqlite3.connect(store)
    conn.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    out = pytps_cli("history", "--store", str(store), check=False)
    assert out.returncode == 2 and "schema version 99" in out.stderr and len(out.stderr.strip().splitlines()) == 1
