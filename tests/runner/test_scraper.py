"""The server-metrics scraper against small HTTP servers on 127.0.0.1: it brackets the run, its
failures (404, not Prometheus text, a server that goes away, one that never answers) are one
warning line and never the run's, a URL it cannot use is one line before the run, and the API
key goes to a metrics URL only when a header asks for it."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.results.files import SCRAPES as SCRAPES_FILE
from pytps.results.files import SCRAPES_RAW as RAW_FILE

BODY = b"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 5\n"


class _Server:
    """A /metrics server; mode: "ok", "404", "html"; seen: each request's headers."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.seen: list[dict[str, str]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, unless the mode drops the connection

            def do_GET(self) -> None:
                outer.seen.append(dict(self.headers))
                status, body = {
                    "ok": (200, BODY),
                    "drop": (200, BODY),
                    "404": (404, b"not found"),
                    "html": (200, b"<html><body>hello</body></html>"),
                }[outer.mode]
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                # "drop": keep-alive promised, then the connection closed (a server's idle timeout)
                self.close_connection = outer.mode == "drop"

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/metrics"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _run(tmp_path, urls, **kw):
    settings = {"requests": 12, "concurrency": 2, "output_tokens": 8, "server_metrics_interval": 0.05, **kw}
    return pytps.run(out=tmp_path / "run", store=False, server_metrics=urls, **settings)


def _lines(result):
    with open(result.out_dir / SCRAPES_FILE, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_scrapes_bracket_the_run_on_its_clock(tmp_path, server):
    result = _run(tmp_path, [server.url], server_metrics_raw=True)
    lines = _lines(result)
    assert len(lines) >= 2
    for line in lines:
        assert line["t_before_ns"] <= line["t_ns"] <= line["t_after_ns"]
        assert line["uncertainty_ns"] == (line["t_after_ns"] - line["t_before_ns"] + 1) // 2
        assert line["error"] is None
    journal = (result.out_dir / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    sends = [json.loads(x)["t_send_ns"] for x in journal]
    assert lines[0]["t_after_ns"] <= min(sends)  # the first scrape is before the first request
    (src,) = result.summary["server_metrics"]["sources"]
    assert src["engines"] == ["llama.cpp"]
    raw = [json.loads(x) for x in (result.out_dir / RAW_FILE).read_text(encoding="utf-8").splitlines()]
    assert len(raw) == len(lines) and raw[0]["text"] == BODY.decode()
    assert result.metadata["server_metrics"]["urls"] == [server.url]


@pytest.mark.parametrize("mode, error", [("404", "HTTP 404"), ("html", "not Prometheus text")])
def test_a_bad_endpoint_is_one_warning(tmp_path, capfd, mode, error):
    s = _Server(mode)
    try:
        result = _run(tmp_path, [s.url])
    finally:
        s.close()
    assert result.summary["requests_ok"] == 12
    warnings = [x for x in capfd.readouterr().err.splitlines() if "server metrics" in x]
    assert len(warnings) == 1 and error in warnings[0]
    (src,) = result.summary["server_metrics"]["sources"]
    assert src["scrapes"] == 0 and src["failed"] >= 2


def test_a_kept_alive_connection_the_server_closed_is_made_anew(tmp_path, capfd):
    s = _Server("drop")
    try:
        result = _run(tmp_path, [s.url])
    finally:
        s.close()
    (src,) = result.summary["server_metrics"]["sources"]
    assert src["failed"] == 0 and src["scrapes"] >= 2
    assert "server metrics" not in capfd.readouterr().err


def test_a_server_that_goes_away_and_one_that_never_answers(tmp_path, capfd):
    server = _Server("drop")  # no kept-alive connection outlives the server
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel does) and never answers: every scrape times out
    port = silent.getsockname()[1]
    scrapes = tmp_path / "run" / SCRAPES_FILE

    def go_away_after_the_first_scrape() -> None:
        while not (scrapes.is_file() and scrapes.read_text().count("\n") >= 2):
            time.sleep(0.01)
        time.sleep(0.2)
        server.close()

    stopper = threading.Thread(target=go_away_after_the_first_scrape, daemon=True)
    stopper.start()
    try:
        result = _run(
            tmp_path,
            [server.url, f"http://127.0.0.1:{port}/metrics"],
            server_metrics_interval=0.3,
            requests=40,
            emulator={"itl_us": 5000},
        )
    finally:
        stopper.join(timeout=10)
        silent.close()
    assert result.summary["requests_ok"] == 40
    warnings = [x for x in capfd.readouterr().err.splitlines() if "server metrics" in x]
    assert len(warnings) == 2
    gone, never = result.summary["server_metrics"]["sources"]
    assert gone["scrapes"] >= 1 and gone["failed"] >= 1
    assert never["scrapes"] == 0 and "timed out" in never["errors"][0]


@pytest.mark.parametrize("url", ["ftp://x/metrics", "localhost:9400", "http://h:port/metrics"])
def test_a_url_it_cannot_use_is_one_line_before_the_run(url):
    with pytest.raises(ConfigError, match="server metrics URL"):
        pytps.runner.config.make_config("http://127.0.0.1:1/v1", server_metrics=[url])


def test_flags_without_server_metrics_are_refused():
    with pytest.raises(ConfigError, match="need --server-metrics"):
        pytps.runner.config.make_config("http://127.0.0.1:1/v1", server_metrics_interval=1.0)


def test_default_url_is_the_base_url_origin():
    cfg = pytps.runner.config.make_config("http://127.0.0.1:8000/v1", server_metrics=True)
    assert cfg.server_metrics.urls == ["http://127.0.0.1:8000/metrics"]


def test_the_api_key_goes_only_where_asked(tmp_path, server):
    _run(tmp_path, [server.url], api_key="sk-secret-key")
    assert server.seen and all("Authorization" not in h for h in server.seen)
    server.seen.clear()
    result = pytps.run(
        requests=2,
        concurrency=1,
        output_tokens=4,
        out=tmp_path / "run2",
        store=False,
        api_key="sk-secret-key",
        server_metrics=[server.url],
        server_metrics_headers={"Authorization": "Bearer sk-secret-key"},
    )
    assert all(h.get("Authorization") == "Bearer sk-secret-key" for h in server.seen)
    saved = (result.out_dir / "results.json").read_text() + (result.out_dir / SCRAPES_FILE).read_text()
    assert "sk-secret-key" not in saved


def test_a_rebuilt_summary_has_the_same_server_metrics(tmp_path):
    from pytps.results.rebuild import load_or_rebuild

    with pytps.Emulator(power_idle_w=30, power_per_stream_w=5) as emu:
        result = pytps.run(
            emu.base_url, requests=10, concurrency=2, output_tokens=8, out=tmp_path / "run", store=False,
            server_metrics=True, server_metrics_interval=0.05,
        )  # fmt: skip
    results_json = result.out_dir / "results.json"
    data = json.loads(results_json.read_text())
    data["summary"] = None  # as a run killed before its finish leaves it
    results_json.write_text(json.dumps(data))
    rebuilt, note = load_or_rebuild(result.out_dir)
    assert note is not None
    assert rebuilt["summary"]["server_metrics"] == result.summary["server_metrics"]
    assert rebuilt["summary"]["joules_per_output_token"] == result.summary["joules_per_output_token"]


def test_configuring_a_run_does_not_load_the_scraper():
    # The settings are checked in pytps.runner.scrape_settings; the scraper (its HTTP client, its
    # thread) is loaded only by the process a scraping run starts.
    code = (
        "import sys\nfrom pytps.runner.config import make_config\n"
        "make_config('http://127.0.0.1:9/v1', server_metrics=True)\n"
        "print('pytps.runner.scraper' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
