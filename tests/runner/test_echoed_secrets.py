"""Issue 40, defect 15 (secrets): a server that echoes the API key in its answer and in a /metrics
label value: with --keep-text the journal's answer_text, extracted_answer and why_wrong hold ***,
and so do server_metrics.jsonl's label values and the raw scrapes. A raw server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from fault_servers import SSE_HEAD, FaultServer, Reader, Request, chunk, event, read_body

import pytps
from pytps.results.folder import load_journal

KEY = "sk-echoed-SECRET-4242"


def echo_key(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """Chat completions answer `Answer: <the bearer credential>`; /metrics carries the key as a label
    (a proxy that labels its series with the key it saw)."""
    if not read_body(reader, req):
        return False
    key = req.headers.get("authorization", "").partition(" ")[2]
    if req.head.split(b" ")[1].endswith(b"/metrics"):
        body = (f'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{api_key="{KEY}"}} 1\n').encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %d\r\n\r\n"
                     % len(body) + body)  # fmt: skip
        return True
    conn.sendall(SSE_HEAD + chunk(event(f"Answer: {key}")) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return True


def test_an_echoed_key_is_redacted_in_answer_text_and_metric_labels(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": "the key?", "expected": "nothing"}) + "\n"
                            for i in range(3)))  # fmt: skip
    with FaultServer(echo_key) as srv:
        out = tmp_path / "r"
        pytps.run(srv.url, model="m", out=out, requests=3, concurrency=1, api_key=KEY, dataset=data, keep_text=True,
                  server_metrics=f"{srv.url}/metrics", server_metrics_interval=0.05, server_metrics_raw=True,
                  store=False)  # fmt: skip
    lines = load_journal(out)
    assert len(lines) == 3
    for line in lines:
        assert line["answer_text"] == "Answer: ***", line
        assert line["extracted_answer"] == "***" and KEY not in (line["why_wrong"] or ""), line
    written = {p.name: p.read_text() for p in out.iterdir() if p.suffix in (".jsonl", ".json", ".log")}
    assert "server_metrics.jsonl" in written and '"api_key":"***"' in written["server_metrics.jsonl"].replace(" ", "")
    leaked = [name for name, text in written.items() if KEY in text]
    assert leaked == [], leaked
