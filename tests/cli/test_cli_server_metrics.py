"""`pytps run` and `pytps sweep` with --server-metrics against `pytps serve`'s /metrics, the TOML
matrix's server_metrics key, and the one-line errors (a URL pytps cannot use, --workers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytps


def pytps_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def emu():
    with pytps.Emulator(ttft_ms=2, itl_us=300, power_idle_w=40, power_per_stream_w=10) as e:
        yield e


def test_run_prints_the_server_lines_and_keeps_the_scrapes(emu, tmp_path):
    out = tmp_path / "r"
    proc = pytps_cli("run", "--base-url", emu.base_url, "--requests", "12", "--concurrency", "2",
                     "--output-tokens", "8", "--server-metrics", "--server-metrics-interval", "0.05",
                     "--server-metrics-raw", "--no-store", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "server generation tokens" in proc.stdout and ": equal" in proc.stdout
    assert "J/output token" in proc.stdout
    assert (out / "server_metrics.jsonl").is_file() and (out / "server_metrics_raw.jsonl").is_file()
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["joules_per_output_token"] > 0


def test_a_scaled_run_is_scraped_once_by_its_driver(emu, tmp_path):
    # The workers' stamps are merged onto the driver's clock, and the driver scrapes on it: the
    # scrapes bracket every worker's requests (each worker's probe included), and no worker scrapes.
    out = tmp_path / "w"
    proc = pytps_cli("run", "--base-url", emu.base_url, "--workers", "2", "--requests", "20", "--warmup", "2",
                     "--concurrency", "4", "--output-tokens", "8", "--server-metrics", "--server-metrics-interval",
                     "0.05", "--no-store", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "server generation tokens" in proc.stdout and ": equal" in proc.stdout, proc.stdout
    scrapes = [json.loads(line) for line in (out / "server_metrics.jsonl").read_text().splitlines()]
    journal = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert scrapes[0]["t_after_ns"] < min(j["t_send_ns"] for j in journal)
    assert scrapes[-1]["t_before_ns"] > max(j["t_done_ns"] for j in journal)
    assert not list((out / "workers").rglob("server_metrics.jsonl"))
    results = json.loads((out / "results.json").read_text())
    assert results["metadata"]["server_metrics"]["urls"] == [emu.base_url + "/metrics"]
    assert results["summary"]["server_metrics"]["sources"][0]["failed"] == 0


def test_sweep_scrapes_every_cell_and_carries_joules_per_token(emu, tmp_path):
    out = tmp_path / "s"
    proc = pytps_cli("sweep", "--base-url", emu.base_url, "--concurrency", "1,2", "--requests", "8",
                     "--output-tokens", "8", "--server-metrics", "--server-metrics-interval", "0.05",
                     "--no-store", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    sweep = json.loads((out / "sweep.json").read_text())
    assert all(c["headline"]["joules_per_output_token"] > 0 for c in sweep["cells"])
    assert "energy per token [J]" in proc.stdout
    for cell in sweep["cells"]:
        assert (out / cell["dir"] / "server_metrics.jsonl").is_file()


def test_matrix_endpoint_server_metrics(emu, tmp_path):
    conf = tmp_path / "bench.toml"
    conf.write_text(
        f'[[endpoint]]\nname = "emu"\nurl = "{emu.base_url}"\nserver_metrics = []\nserver_metrics_interval = 0.05\n'
        '[[workload]]\nname = "short"\ninput_tokens = 16\noutput_tokens = 8\nconcurrency = 2\nrequests = 6\n'
    )
    out = tmp_path / "m"
    proc = pytps_cli("run", "-c", str(conf), "--no-store", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (scrapes,) = list(out.rglob("server_metrics.jsonl"))
    assert json.loads(scrapes.read_text().splitlines()[0])["url"] == emu.base_url + "/metrics"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--server-metrics", "localhost:9400"], "server metrics URL 'localhost:9400'"),
        (["--server-metrics-header", "X-Team: a"], "need --server-metrics"),
        (["--server-metrics", "--server-metrics-header", "nocolon"], "--server-metrics-header 'nocolon' is not K:V"),
    ],
)
def test_one_line_errors_before_the_run(emu, tmp_path: Path, args, message):
    proc = pytps_cli("run", "--base-url", emu.base_url, "--requests", "2", "--no-store", "--out", str(tmp_path / "x"),
                     *args)  # fmt: skip
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
