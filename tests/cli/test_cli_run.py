"""The pytps run command line: the main command with no arguments, clear one-line errors, Ctrl-C."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pytps
from pytps.results.folder import load_journal, load_results


def pytps_cli(*args, timeout=120, env=None):
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_main_command_runs_with_no_endpoint_and_prints_the_table(tmp_path):
    out = pytps_cli("run", "--requests", "6", "--output-tokens", "8", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    assert "TTFT" in out.stdout and "TPOT" in out.stdout and "output throughput" in out.stdout
    assert "· native ·" in out.stdout and "client CPU" in out.stdout  # the default transport, and its own cost
    assert "built-in emulator" in out.stderr
    assert load_results(tmp_path / "r")["summary"]["requests_ok"] == 6


def test_the_report_names_the_tls_stack_that_measured():
    import io

    from rich.console import Console

    from pytps.report.console import render

    buf = io.StringIO()
    render({"metadata": {"model": "m", "transport": "native", "tls": {"library": "OpenSSL 3.0.19", "verify": False},
                         "load": {"mode": "concurrency", "concurrency": 1}, "endpoint": {}},
            "summary": {}}, Console(file=buf, width=200))
    assert "native over TLS (OpenSSL 3.0.19, unverified)" in buf.getvalue()


def test_report_reads_a_saved_run(tmp_path):
    assert pytps_cli("run", "--requests", "3", "--output-tokens", "4", "--out", str(tmp_path / "r")).returncode == 0
    out = pytps_cli("report", str(tmp_path / "r"))
    assert out.returncode == 0 and "TTFT" in out.stdout
    out = pytps_cli("report", str(tmp_path / "r"), "--json")
    assert json.loads(out.stdout)["requests_ok"] == 3


def _one_line_error(out):
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip() and "built-in emulator" not in line]
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--input-tokens", "ten"], "--input-tokens"),
        (["--concurrency", "2", "--rate", "3"], "--max-concurrency"),
        (["--extra-body", "{nope"], "--extra-body"),
        (["--header", "nocolon"], "K:V"),
        (["--max-error-rate", "3"], "0..1"),
        (["--api-key-env", "PYTPS_SURELY_UNSET_VAR"], "PYTPS_SURELY_UNSET_VAR"),
    ],
)
def test_bad_flags_give_one_clear_line(args, needle):
    line = _one_line_error(pytps_cli("run", "--base-url", "http://127.0.0.1:9", *args))
    assert needle in line


def test_unreachable_endpoint_gives_one_clear_line():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = _one_line_error(pytps_cli("run", "--base-url", f"http://127.0.0.1:{port}", "--requests", "2"))
    assert "cannot" in line and "--base-url" in line


def test_404_gives_one_clear_line():
    with pytps.Emulator() as emu:
        line = _one_line_error(pytps_cli("run", "--base-url", emu.base_url + "/nope", "--model", "m",
                                         "--requests", "2"))
    assert "404" in line


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
def test_a_base_url_written_as_the_openai_sdk_writes_it_works(suffix, tmp_path):
    # http://host:port/v1 once requested /v1/v1/models and stopped with a 404.
    with pytps.Emulator(ttft_ms=1, itl_us=200) as emu:
        out = pytps_cli("run", "--base-url", emu.base_url + suffix, "--requests", "2", "--output-tokens", "4",
                        "--out", str(tmp_path / "out"), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["requests_ok"] == 2 and summary["output_tokens_total"] == 8


def test_a_base_url_that_is_not_http_gives_one_clear_line():
    line = _one_line_error(pytps_cli("run", "--base-url", "127.0.0.1:8000", "--requests", "1"))
    assert "--base-url" in line and "http://127.0.0.1:8000" in line


class _Refuses(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self._deny()

    def do_POST(self):
        self._deny()

    def _deny(self):
        body = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_401_gives_one_clear_line_without_the_key():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "OPENAI_API_KEY": "sk-secret-never-printed-123"}
        out = pytps_cli("run", "--base-url", f"http://127.0.0.1:{server.server_address[1]}", "--requests", "2",
                        env=env)
    finally:
        server.shutdown()
    line = _one_line_error(out)
    assert "key" in line
    assert "sk-secret-never-printed-123" not in out.stdout + out.stderr


def test_ctrl_c_keeps_what_was_measured(tmp_path):
    out_dir = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "run", "--requests", "100000", "--concurrency", "4", "--output-tokens", "8",
         "--emu-ttft-ms", "2", "--emu-itl-us", "500", "--out", str(out_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            journal = out_dir / "requests.jsonl"
            if journal.exists() and journal.read_text().count("\n") >= 10:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    results = load_results(out_dir)
    journal = load_journal(out_dir)
    assert results["metadata"]["interrupted"] is True
    assert results["summary"]["requests_total"] == len(journal) >= 10
    with np.load(out_dir / "events.npz") as events:
        assert set(events["request_index"].tolist()) <= {line["index"] for line in journal}
    assert "TTFT" in stdout


class _NoStreamOptions(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that, like some, rejects stream_options with a 400."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "stream_options" in body:
            err = b'{"error": {"message": "Unrecognized request argument supplied: stream_options"}}'
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(err)))
            self.end_headers()
            self.wfile.write(err)
            return
        chunks = [{"id": "c1", "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
                  for w in ("a", " b", " c")]
        payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("transport", ["native", "asyncio", "httpx"])
def test_a_server_rejecting_the_usage_request_is_retried_once_without_it(transport, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoStreamOptions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = pytps.run(f"http://127.0.0.1:{server.server_address[1]}", model="m", requests=3,
                           transport=transport, out=tmp_path / "r")
    finally:
        server.shutdown()
    assert result.summary["requests_ok"] == 3
    assert result.metadata["include_usage"] is False
    assert "stream_options" in result.metadata["usage_note"]
    # No usage: tokens are counted as events, and the report says so.
    assert result.summary["token_source"] == "events"
    assert result.summary["output_tokens_total"] == 9


def test_clock_prints_the_clock_and_the_read_floor():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytps", "clock", "--connections", "2", "--gap-us", "5000"],
                         capture_output=True, text=True, check=True, timeout=60)
    data = json.loads(out.stdout)
    assert data["clock"]["source"] == "CLOCK_MONOTONIC" and data["clock"]["resolution_ns"] >= 1
    assert data["python_clock"]["implementation"] == "clock_gettime(CLOCK_MONOTONIC)"
    assert data["python_clock"]["same_clock"] is True
    from pytps import _core

    assert data["event_loop"]["backend"] == _core.EVENT_BACKEND in ("epoll", "poll")
    assert data["event_loop"]["wait"] == _core.EVENT_WAIT
    assert data["read_floor"]["messages"] == 2 * 200 and data["read_floor"]["reader_cpu_ns_per_message"] > 0
