"""Provenance (issue 39): every results folder records its host and server, and the journal the
server's request ids, equal to the emulator's truth on every transport."""

from __future__ import annotations

import asyncio
import os
import platform

import pytest

import pytps
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.runner.provenance import cgroup_limits, route_mtu, server_root

TRANSPORTS = ("asyncio", "httpx", "native")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_request_ids_in_the_journal_are_the_servers(transport, tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        cfg = make_config(
            emu.base_url + "/v1",
            out=tmp_path / "out",
            requests=5,
            warmup=1,
            input_tokens=16,
            output_tokens=6,
            transport=transport,
            request_id_header="X-Request-Id",
        )
        asyncio.run(Runner(cfg).run())
        truth = emu.wait_truth(6)
    lines = load_journal(tmp_path / "out")
    measured = [line for line in lines if not line.get("warmup")]
    assert len(lines) == 6 and len(measured) == 5
    assert {line["request_id"] for line in lines} == {t["id"] for t in truth}
    assert all(line["request_id"] == line["response_id"] for line in lines)
    md = load_results(tmp_path / "out")["metadata"]
    prefix = md["request_id_header"]["prefix"]
    assert md["request_id_header"]["name"] == "X-Request-Id" and prefix.startswith("pytps-")
    assert sorted(line["sent_request_id"] for line in lines) == sorted(f"{prefix}{i}" for i in range(6))


def test_every_folder_has_the_host_and_server_facts(tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        cfg = make_config(emu.base_url + "/v1", out=tmp_path / "out", requests=3, input_tokens=16, output_tokens=4)
        asyncio.run(Runner(cfg).run())
    md = load_results(tmp_path / "out")["metadata"]
    host = md["host"]
    assert host["cpu_count"] == os.cpu_count()
    assert host["kernel"] == platform.release() and host["python"] == platform.python_version()
    assert host["pytps_version"] == pytps.__version__
    assert host["cpu_model"]  # this machine's /proc/cpuinfo names it
    assert (host["cpu_limit"], host["memory_limit_bytes"]) == tuple(cgroup_limits().values())
    assert host["route_mtu"] == route_mtu("127.0.0.1", 1) and host["route_mtu"] > 1500  # loopback's
    assert set(md["server"]) == {"server_header", "version", "props"}
    assert md["request_id_header"] is None
    assert all(line["sent_request_id"] is None for line in load_journal(tmp_path / "out"))


def test_server_facts_read_version_and_props_and_the_server_header(tmp_path):
    """A server that offers /version and /props (vLLM's and llama.cpp's routes) and a Server header."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from pytps.runner.provenance import server_facts

    class Info(BaseHTTPRequestHandler):
        server_version, sys_version = "fake-llm/1.0", ""  # its Server header

        def do_GET(self) -> None:
            body = {"/version": b'{"version": "0.11.0"}', "/props": b'{"total_slots": 4}'}.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Info)
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        assert server_root(base) == f"http://127.0.0.1:{httpd.server_address[1]}"
        facts = asyncio.run(server_facts(base))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert facts == {"server_header": "fake-llm/1.0", "version": {"version": "0.11.0"}, "props": {"total_slots": 4}}
