"""Goodput, SLOs, validation and cost against values computed by hand, on real runs against a
small server on 127.0.0.1 whose answers, delays and usage are known."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pytps.errors import ConfigError
from pytps.results.folder import load_journal
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner

USAGE = {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103, "prompt_tokens_details": {"cached_tokens": 40}}
ANSWER = ['{"answer": ', "42", "}"]  # three chunks, one token each


@contextmanager
def serving(slow_every: int = 0, slow_s: float = 0.0) -> Iterator[str]:
    """Every `slow_every`-th request (1-based) waits slow_s before its first token."""
    count = 0
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self._send(b'{"data": [{"id": "m"}]}', "application/json")

        def do_POST(self) -> None:
            nonlocal count
            self.rfile.read(int(self.headers["content-length"]))
            with lock:
                count += 1
                n = count
            if slow_every and n % slow_every == 0:
                time.sleep(slow_s)
            chunks = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in ANSWER]
            chunks.append({"choices": [], "usage": USAGE})
            body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            self._send(body, "text/event-stream")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def run(url: str, tmp_path, **settings):
    cfg = make_config(url, requests=10, concurrency=1, out=tmp_path / "out", input_tokens=16, output_tokens=3,
                      **settings)
    return run_coroutine(Runner(cfg).run()), load_journal(tmp_path / "out")


def test_cost_and_goodput_by_hand(tmp_path):
    # Every 5th request (the 5th and 10th sent) waits 200 ms: it misses a 100 ms TTFT SLO.
    with serving(slow_every=5, slow_s=0.2) as url:
        result, journal = run(url, tmp_path, slo="ttft=0.1", price_input=2.0, price_cached_input=0.5,
                              price_output=8.0, price_request=0.001, currency="EUR")
    s = result.summary
    # One request: 60 uncached x 2 + 40 cached x 0.5 + 3 output x 8 = 164 per million, + 0.001.
    per_request = 164 / 1e6 + 0.001
    assert [line["cost"] for line in journal] == pytest.approx([per_request] * 10)
    assert s["cost"]["currency"] == "EUR"
    assert s["cost"]["total"] == pytest.approx(10 * per_request)
    assert s["cost"]["per_request"] == pytest.approx(per_request)
    assert s["cost"]["per_million_output_tokens"] == pytest.approx(10 * per_request / 30 * 1e6)
    assert s["useful_requests"] == 8 and s["useful_share"] == pytest.approx(0.8)
    assert s["cost"]["per_useful_response"] == pytest.approx(10 * per_request / 8)
    assert s["goodput_rps"] == pytest.approx(8 / s["measured_window_s"])
    assert s["goodput_tps"] == pytest.approx(24 / s["measured_window_s"])
    assert s["not_useful"] == {"slo": 2}
    slow = [line for line in journal if not line["useful"]]
    assert len(slow) == 2 and all(line["why_not_useful"].startswith("slo: ttft") for line in slow)


def test_run_level_slo_is_reported_beside_goodput(tmp_path):
    with serving(slow_every=5, slow_s=0.2) as url:
        result, _ = run(url, tmp_path, slo_run="ttft:p50=0.1,ttft:max=0.1")
    checks = {c["slo"]: c for c in result.summary["slo_run"]["checks"]}
    assert checks["ttft:p50"]["met"] and not checks["ttft:max"]["met"]
    assert result.summary["slo_run"]["met"] is False
    assert result.summary["useful_share"] == 1.0  # no per-request SLO: goodput is untouched


@pytest.mark.parametrize(
    ("settings", "useful", "why"),
    [
        ({"expect_json": ""}, 10, None),
        ({"expect_json": "answer"}, 10, None),
        ({"expect_json": "answer,reason"}, 0, "validation: the answer's JSON lacks reason"),
        ({"expect_regex": r'"answer":\s*42'}, 10, None),
        ({"expect_regex": r"forty-two"}, 0, "validation: the answer does not match /forty-two/"),
    ],
)
def test_validation_of_the_answer_text(settings, useful, why, tmp_path):
    with serving() as url:
        result, journal = run(url, tmp_path, **settings)
    assert result.summary["useful_requests"] == useful
    assert {line["why_not_useful"] for line in journal} == {why}


def test_bad_slo_and_validation_settings_are_one_line_errors():
    for settings, needle in (({"slo": "speed=1"}, "--slo"), ({"slo": "ttft=fast"}, "not a number"),
                             ({"slo_run": "ttft:p42=1"}, "--slo-run"), ({"expect_regex": "("}, "--expect-regex"),
                             ({"price_output": -1.0}, "must be >= 0")):
        with pytest.raises(ConfigError, match=needle):
            make_config("http://127.0.0.1:9", **settings)
