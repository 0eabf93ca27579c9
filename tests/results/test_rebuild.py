"""A folder is a result whatever happened to the process: `pytps report` rebuilds the summary of
a run that never finished from its journal and event log, with the run's own finishing code."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pytps
from pytps.results.rebuild import load_or_rebuild, rebuild_summary

# Keys of a finished run's summary that a rebuild cannot know (the process's CPU) or that the run
# judged against a saved envelope.
NOT_REBUILT = {"client_cpu_us_per_token"}


def _pytps(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    pytps.run(requests=60, concurrency=4, output_tokens=16, input_tokens=16, warmup=2, out=out,
              emulator={"ttft_ms": 2, "itl_us": 300})
    return out


def test_the_rebuilt_summary_is_the_finished_runs(finished):
    results = json.loads((finished / "results.json").read_text())
    rebuilt, lines = rebuild_summary(finished, results["metadata"])
    assert lines == 62
    expected = {k: v for k, v in results["summary"].items() if k not in NOT_REBUILT}
    got = json.loads(json.dumps({k: v for k, v in rebuilt.items() if k not in NOT_REBUILT}, default=float))
    assert got == json.loads(json.dumps(expected))


def test_a_corrupt_results_json_is_one_line_and_the_report_is_rebuilt(finished, tmp_path):
    import shutil

    d = tmp_path / "corrupt"
    shutil.copytree(finished, d)
    (d / "results.json").write_text('{"schema_version": 7, "metad')
    r = _pytps("report", str(d), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "results.json is not valid JSON" in r.stderr and "rebuilt from 62 journaled requests" in r.stderr
    assert json.loads(r.stdout)["requests_total"] == 60
    (d / "requests.jsonl").unlink()
    r = _pytps("report", str(d))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def test_a_sigkilled_run_reports_its_journaled_requests(tmp_path):
    server = subprocess.Popen(
        [sys.executable, "-m", "pytps", "serve", "--port", "0", "--ttft-ms", "2", "--itl-us", "500"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = server.stdout.readline().split("serving on ")[1].split()[0]
        out = tmp_path / "killed"
        run = subprocess.Popen(
            [sys.executable, "-m", "pytps", "run", "--base-url", url, "--requests", "100000", "--concurrency", "4",
             "--output-tokens", "16", "--input-tokens", "16", "--out", str(out), "--json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        journal = out / "requests.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_bytes().count(b"\n") >= 150:
                break
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)
        run.wait()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=10)
    whole = sum(1 for line in journal.read_text().splitlines() if line.endswith("}"))
    assert (out / "events.log").exists()
    r = _pytps("report", str(out), "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "the run did not finish: summary rebuilt from" in r.stderr
    summary = json.loads(r.stdout)
    assert summary["requests_total"] >= 150 and summary["requests_total"] in (whole, whole - 1)
    assert summary["requests_ok"] == summary["requests_total"] and summary["ttft_s"]["count"] > 0
    table = _pytps("report", str(out))
    assert table.returncode == 0 and "errors 0/0" not in table.stdout
    # --repair writes what the finish would have: results.json with the summary, events.npz.
    r = _pytps("report", "--repair", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "events.npz").exists() and not (out / "events.log").exists()
    results, note = load_or_rebuild(out)
    assert note is None and results["summary"]["requests_total"] == summary["requests_total"]
    assert results["summary"]["ttft_s"] == summary["ttft_s"]
    # compare and the HTML report read such a folder alike.
    r = _pytps("compare", str(out), str(out), "--json")
    assert r.returncode == 0, r.stderr
