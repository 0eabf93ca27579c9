"""Issue 40, defects 9 and 10: what a /metrics server sends that no server should.

- NaN and +-Inf samples are no reading: the summary, the report and the store all work;
- readings outside a common name's physical bounds (negative power, a kv_cache_usage ratio of
  114, -3 requests running) are marked `implausible` and kept out of every figure;
- a counter reset on one series of several (one GPU of two) counts as Prometheus's increase()
  does, per series: the other series' whole count is not read as an increase."""

from __future__ import annotations

import http.server
import json
import math
import threading
from pathlib import Path

import pytest

import pytps
from pytps.measure.server_metrics.parse import Scrape, parse_exposition
from pytps.measure.server_metrics.summary import summarize


def _scrape(t_s: float, text: str, url: str = "http://x:9400/metrics") -> Scrape:
    t = int(t_s * 1e9)
    types, samples = parse_exposition(text)
    return Scrape(url, t - 1000, t + 1000, types, samples)


def _write(tmp_path: Path, scrapes: list[Scrape]) -> Path:
    path = tmp_path / "server_metrics.jsonl"
    path.write_text("".join(json.dumps(s.as_json()) + "\n" for s in scrapes))
    return path


def _dcgm(mj: tuple[float, float], w: float, util: float = 50) -> str:
    return (
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0"}} {mj[0]}\n'
        f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="1"}} {mj[1]}\n'
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="0"}} {w}\n'
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0"}} {util}\n'
    )


def test_a_reset_on_one_series_counts_per_series(tmp_path: Path) -> None:
    """GPU 1's energy counter resets at the third scrape: each GPU used 150 J per second. Summed
    before increase(), the drop read as a reset of the sum and GPU 0's whole 1e6 J came in."""
    readings = [(1e9 + i * 150e3, 1e9 + i * 150e3 if i < 2 else (i - 2) * 150e3) for i in range(5)]
    path = _write(tmp_path, [_scrape(i, _dcgm(r, 150)) for i, r in enumerate(readings)])
    sm = summarize(path, [(int(0.5e9), int(3.5e9))], {"output_tokens": 100})
    # GPU 0: 4 x 150 J; GPU 1: 150 J before the reset, 0 + 2 x 150 J after (counted from zero)
    assert sm["energy"]["energy_j"] == pytest.approx(4 * 150 + 150 + 2 * 150)
    assert sm["joules_per_output_token"] == pytest.approx(1050 / 100)


def test_nan_and_inf_are_no_reading(tmp_path: Path) -> None:
    texts = [
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 10\n",
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 2\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total +Inf\n",
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running -Inf\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 30\n",
    ]
    path = _write(tmp_path, [_scrape(i, t, "http://x/metrics") for i, t in enumerate(texts)])
    sm = summarize(path, [], {"output_tokens": 20})
    (src,) = sm["sources"]
    assert src["common"]["requests_running"]["run"] == {"mean": 2.0, "p50": 2.0, "max": 2.0, "scrapes": 1}
    assert src["common"]["generation_tokens"]["run"]["delta"] == 20
    assert src["not_finite_samples"] == 3
    json.dumps(sm, allow_nan=False)  # nothing NaN left to write


def test_readings_outside_physical_bounds_are_marked_and_left_out(tmp_path: Path) -> None:
    texts = [
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.5\n"
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running -3\n"
        + _dcgm((1e6, 1e6), -11077),
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 114\n"
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 4\n"
        + _dcgm((1e6, 1e6), -11077),
    ]
    path = _write(tmp_path, [_scrape(i, t, "http://x/metrics") for i, t in enumerate(texts)])
    sm = summarize(path, [], {"output_tokens": 10})
    common = sm["sources"][0]["common"]
    kv, running, power = common["kv_cache_usage"], common["requests_running"], common["power_w"]
    assert kv["implausible"]["readings"] == 1 and kv["implausible"]["example"] == 114
    assert kv["run"]["max"] == 0.5
    assert running["implausible"]["example"] == -3 and running["run"]["mean"] == 4
    assert power["implausible"]["readings"] == 2 and power["run"] is None
    # the energy counter (0 J over the run) is plausible; no negative power reaches a figure
    assert sm["joules_per_output_token"] == 0.0
    assert all(v is None or v >= 0 for v in (sm["joules_per_output_token"], sm["output_tokens_per_joule"]))


class _Metrics(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = (
        b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n"
        b"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc +Inf\n"
        b"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE -50\n"
        b"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total NaN\n"
    )

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_run_report_and_store_survive_nan_inf_and_negative_metrics(tmp_path: Path) -> None:
    """The issue: the run exited 1 (TypeError in the report), pytps report failed, and the store
    write failed (NOT NULL)."""
    import subprocess
    import sys

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/metrics"
    store = tmp_path / "h.sqlite"
    try:
        p = subprocess.run(
            [sys.executable, "-m", "pytps", "run", "--requests", "6", "--output-tokens", "4",
             "--server-metrics", url, "--server-metrics-interval", "0.05", "--out", str(tmp_path / "r"),
             "--store", str(store)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        httpd.shutdown()
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "results store" not in p.stderr, p.stderr
    r = subprocess.run([sys.executable, "-m", "pytps", "report", str(tmp_path / "r")], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    from pytps.store.store import Store

    with Store(str(store)) as s:
        assert len(s.runs()) == 1
    summary = json.loads((tmp_path / "r" / "results.json").read_text())["summary"]
    sm = summary["server_metrics"]
    assert sm["sources"][0]["common"]["power_w"]["implausible"]["readings"] >= 2
    assert summary["joules_per_output_token"] is None or math.isfinite(summary["joules_per_output_token"])
    _ = pytps  # the library is what the CLI runs
