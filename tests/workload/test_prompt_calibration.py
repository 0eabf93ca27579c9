"""Prompt-size calibration against servers whose prompt_tokens do not follow the prompt: one that
always reports the same count, one that truncates to a small context. Prompts must stay bounded,
and calibration must stop once, saying why. Real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from pytps.report.run_warnings import collect
from pytps.results.folder import load_results
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner
from pytps.workload.synthetic import SyntheticWorkload


def _handler(prompt_tokens: Callable[[int], int], sizes: list[int]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # head and body are two writes: no 40 ms delayed-ACK stall

        def do_GET(self) -> None:
            self._send(200, b'{"data": [{"id": "m"}]}', "application/json")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            sizes.append(len(body))
            usage = {"prompt_tokens": prompt_tokens(len(body)), "completion_tokens": 2, "total_tokens": 0}
            chunks = [{"choices": [{"index": 0, "delta": {"content": "a "}}]}] * 2
            chunks.append({"choices": [], "usage": usage})
            sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            self._send(200, sse, "text/event-stream")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving(prompt_tokens: Callable[[int], int]) -> Iterator[tuple[str, list[int]]]:
    sizes: list[int] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(prompt_tokens, sizes))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", sizes
    finally:
        server.shutdown()
        server.server_close()


SERVERS = {
    # Always the same count, whatever the prompt (it was 450 B, 2.1 KB, ... 2.1 MB by request 12).
    "constant": lambda size: 10,
    # Counts about a token per 4 bytes of body, but truncates to a 40-token context.
    "truncating": lambda size: min(40, math.ceil(size / 4)),
}


@pytest.mark.parametrize("server", SERVERS)
def test_calibration_stays_bounded_and_stops_once_saying_why(server, tmp_path):
    with serving(SERVERS[server]) as (url, sizes):
        cfg = make_config(url, input_tokens=64, output_tokens=2, requests=30, out=tmp_path / "out")
        result = run_coroutine(Runner(cfg).run())
    assert result.summary["requests_ok"] == 30
    # Bounded: no body is past the bound's multiple of the first, uncalibrated one (plus JSON).
    assert max(sizes) <= SyntheticWorkload.MAX_PROMPT_SCALE * sizes[0] + 200, sizes
    saved = load_results(tmp_path / "out")
    calibration = saved["metadata"]["prompt_calibration"]
    assert calibration["stopped"] and "did not follow" in calibration["stopped"]
    # After it stopped, prompts are back at their uncalibrated size.
    assert abs(sizes[-1] - sizes[0]) <= 0.25 * sizes[0]
    warnings = [w for w in collect(saved) if "prompt_tokens" in w]
    assert len(warnings) == 1 and "calibration stopped" in warnings[0]


def test_a_server_that_follows_the_prompt_is_still_calibrated(tmp_path):
    # About 1.3 tokens per word plus a 20-token template: calibration tracks and never stops.
    with serving(lambda size: 20 + math.ceil(size / 5)) as (url, sizes):
        cfg = make_config(url, input_tokens="32-256", output_tokens=2, requests=30, out=tmp_path / "out")
        run_coroutine(Runner(cfg).run())
    calibration = load_results(tmp_path / "out")["metadata"]["prompt_calibration"]
    assert calibration["stopped"] is None and calibration["reports"] == 30
    assert calibration["overhead_tokens"] > 5
