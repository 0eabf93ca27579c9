"""Exit statuses CI can use (pytps.app.exit_codes), and SIGTERM / SIGHUP finishing a run as
Ctrl-C does: stop sending, keep what was measured, write the summary."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from fault_servers import FaultServer
from folder_checks import check_results_folder
from hostile import answer

from pytps.app.exit_codes import TABLE


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", "0", "--ttft-ms", "2", "--itl-us", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split("serving on ")[1].split()[0]
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_finish_the_run_with_its_summary(server, tmp_path, signum, code):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "run", "--base-url", server, "--requests", "100000", "--concurrency", "4",
         "--output-tokens", "16", "--input-tokens", "16", "--out", str(out), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    journal = out / "requests.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (journal.exists() and journal.read_bytes().count(b"\n") >= 20):
        time.sleep(0.05)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["requests_total"] >= 20 and json.loads(stdout)["requests_total"] == summary["requests_total"]
    assert (out / "events.npz").exists() and not (out / "events.log").exists()
    check_results_folder(out)


def _run(url: str, tmp_path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--base-url", url, "--model", "m", "--requests", "12",
         "--out", str(tmp_path / "run"), *extra],
        capture_output=True, text=True, timeout=120,
    )


def test_a_run_in_which_every_request_failed_exits_3(tmp_path):
    with FaultServer(answer(b'{"error": "overloaded"}', "application/json", "503 Service Unavailable")) as srv:
        r = _run(srv.url, tmp_path)
    assert r.returncode == 3, r.stderr
    assert "no measured request succeeded" in r.stderr and "Traceback" not in r.stderr
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["requests_ok"] == 0


def test_max_error_rate_exceeded_exits_4(server, tmp_path):
    calls = {"n": 0}

    def half_fail(srv, conn, reader, req):
        calls["n"] += 1
        body = b"" if calls["n"] % 2 else b"x"
        handler = answer(b"data: [DONE]\n\n") if body else answer(b'{"error":"x"}', "application/json", "500 Oops")
        return handler(srv, conn, reader, req)

    with FaultServer(half_fail) as srv:
        r = _run(srv.url, tmp_path, "--max-error-rate", "0.1", "--requests", "200")
    assert r.returncode == 4, r.stderr


def test_a_healthy_run_exits_0(server, tmp_path):
    assert _run(server, tmp_path).returncode == 0


def test_the_table_is_in_help_and_in_the_readme():
    from pathlib import Path

    r = subprocess.run([sys.executable, "-m", "pytps", "--help"], capture_output=True, text=True)
    assert TABLE in r.stdout
    r = subprocess.run([sys.executable, "-m", "pytps", "run", "--help"], capture_output=True, text=True)
    assert "143  terminated by SIGTERM" in r.stdout
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for line in TABLE.splitlines()[1:8]:
        code, _, meaning = line.strip().partition(" ")
        assert f"| {code} |" in readme, code
