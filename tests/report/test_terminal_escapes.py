"""Issue 40, defect 12: a server's model name `evil\\x1b]0;PWNED\\x07\\x1b[2J` (and U+202E) is
shown escaped by run, report, history and compare: no raw control character reaches the terminal."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from pytps.report.terminal import shown

EVIL = "evil\x1b]0;PWNED\x07\x1b[2J\u202eabc\x9b"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_shown_escapes_c0_del_c1_and_bidi() -> None:
    assert shown(EVIL) == "evil\\x1b]0;PWNED\\x07\\x1b[2J\\u202eabc\\x9b"
    assert shown("a\nb\tc\x7f") == "a\\x0ab\\x09c\\x7f"
    assert shown("a\nb\tc", keep_lines=True) == "a\nb\tc"
    assert shown("ordinary text: 10 µs, [bold]") == "ordinary text: 10 µs, [bold]"


class _Evil(http.server.BaseHTTPRequestHandler):
    """An OpenAI-style server whose model is EVIL."""

    protocol_version = "HTTP/1.1"

    def _send(self, body: bytes, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(json.dumps({"data": [{"id": EVIL}]}).encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        chunk = {"id": "x", "model": EVIL, "choices": [{"index": 0, "delta": {"content": "hi"}}]}
        usage = {"id": "x", "model": EVIL, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        body = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode()
        self._send(body, "text/event-stream")

    def log_message(self, *args: object) -> None:
        pass


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "OPENAI_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)  # fmt: skip


def test_run_report_history_and_compare_escape_the_servers_model_name(tmp_path: Path) -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Evil)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}"
    store = str(tmp_path / "h.sqlite")
    try:
        outs = [
            _cli("run", "--base-url", url, "--requests", "4", "--output-tokens", "1", "--out", "a", "--store", store,
                 cwd=tmp_path),
            _cli("run", "--base-url", url, "--requests", "4", "--output-tokens", "1", "--out", "b", "--store", store,
                 cwd=tmp_path),
        ]  # fmt: skip
    finally:
        httpd.shutdown()
    outs += [
        _cli("report", "a", cwd=tmp_path),
        _cli("report", "a", "--markdown", cwd=tmp_path),
        _cli("history", "--store", store, cwd=tmp_path),
        _cli("compare", "a", "b", cwd=tmp_path),
    ]
    for p in outs:
        assert p.returncode == 0, (p.args, p.stderr)
        for text in (p.stdout, p.stderr):
            assert not RAW.search(text), (p.args, text)
    assert "\\x1b]0;PWNED" in outs[0].stdout + outs[2].stdout
