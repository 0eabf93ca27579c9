"""pytps._core.ClientEngine: the native HTTP/1.1 client thread, against the emulator and tiny
misbehaving servers made here."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import time

import pytest

import pytps
from pytps._native import _core

SECOND = 1_000_000_000


def chat_request(port: int, tokens: int = 5) -> bytes:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "max_tokens": tokens, "stream_options": {"include_usage": True}}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def wait_results(engine, n: int, timeout_s: float = 10.0) -> dict:
    """Waits on notify_fd until n results were collected; returns them by id."""
    out = {}
    deadline = time.monotonic() + timeout_s
    while len(out) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(out)} of {n} results after {timeout_s} s"
        select.select([engine.notify_fd], [], [], left)
        for r in engine.collect():
            out[r.id] = r
    return out


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ScriptServer:
    """Accepts connections; for each, reads a request head and runs script(conn)."""

    def __init__(self, script) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.script = script
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                part = conn.recv(65536)
                if not part:
                    return
                data += part
            try:
                self.script(conn, self.stop)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join()


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def drip(conn, stop) -> None:
    conn.sendall(SSE_HEAD)
    while not stop.wait(1.0):  # one byte a second: never idle for a second, never done
        conn.sendall(b"1\r\n:\r\n")


def half_chunk(conn, stop) -> None:
    conn.sendall(SSE_HEAD + b"40\r\ndata: {")  # a chunk that never ends
    stop.wait(5)


def truncate(conn, stop) -> None:
    conn.sendall(SSE_HEAD + b"40\r\ndata: {")


def test_requests_reuse_one_keep_alive_connection():
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port)
        for i in range(5):
            engine.submit(i, chat_request(emu.port), "openai-chat")
            r = wait_results(engine, 1)[i]
            assert r.error is None
            assert r.http.status == 200 and r.http.message_done and r.http.keep_alive
            assert r.http.recorder.done and r.http.recorder.usage["completion_tokens"] == 5
            assert (r.connect_ns is not None) == (i == 0)
            assert r.t_send_ns <= r.http.t_headers_ns <= r.t_done_ns
        assert engine.connections_opened == 1
        engine.stop()


def test_concurrent_requests_stay_within_max_connections():
    with pytps.Emulator(ttft_ms=20, itl_us=100) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port, max_connections=2)
        for i in range(6):
            engine.submit(i, chat_request(emu.port, tokens=3), "openai-chat")
        results = wait_results(engine, 6)
        assert all(r.error is None and r.http.recorder.done for r in results.values())
        assert engine.connections_opened == 2
        engine.stop()


def test_refused_port_is_a_connect_error():
    port = free_port()
    engine = _core.ClientEngine("127.0.0.1", port)
    engine.submit(1, chat_request(port), "openai-chat")
    r = wait_results(engine, 1)[1]
    assert r.error == "connect"
    assert "refused" in r.error_detail.lower()
    assert r.t_send_ns is None and r.http.status is None
    engine.stop()


def test_every_address_is_tried_until_one_connects():
    # The emulator listens on 127.0.0.1 only: ::1, first in the list (as localhost often
    # resolves), is refused, and the request goes on to 127.0.0.1.
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        engine = _core.ClientEngine("localhost", emu.port, addresses=["::1", "127.0.0.1"])
        for i in range(3):
            engine.submit(i, chat_request(emu.port), "openai-chat")
            r = wait_results(engine, 1)[i]
            assert r.error is None and r.http.status == 200, r.error_detail
        engine.stop()


def test_a_connect_refused_everywhere_names_every_address():
    port = free_port()
    engine = _core.ClientEngine("localhost", port, addresses=["::1", "127.0.0.1"])
    engine.submit(1, chat_request(port), "openai-chat")
    r = wait_results(engine, 1)[1]
    assert r.error == "connect"
    assert f"[::1]:{port}: connect failed: Connection refused" in r.error_detail
    assert f"127.0.0.1:{port}: connect failed: Connection refused" in r.error_detail
    assert r.retries == 0 and r.t_send_ns is None
    engine.stop()
    with pytest.raises(ValueError, match="addresses is empty"):
        _core.ClientEngine("localhost", port, addresses=[])


def test_unresolvable_host_is_a_connect_error():
    engine = _core.ClientEngine("no-such-host.invalid", 80)
    engine.submit(1, b"GET / HTTP/1.1\r\n\r\n", "openai-chat")
    assert wait_results(engine, 1)[1].error == "connect"
    engine.stop()


def test_a_server_that_drips_hits_the_total_timeout():
    with ScriptServer(drip) as srv:
        engine = _core.ClientEngine("127.0.0.1", srv.port, idle_timeout_ns=3 * SECOND,
                                    total_timeout_ns=SECOND // 2)
        engine.submit(1, chat_request(srv.port), "openai-chat")
        r = wait_results(engine, 1)[1]
        assert r.error == "timeout" and "total timeout" in r.error_detail
        assert r.http.status == 200
        assert r.t_done_ns - r.t_send_ns >= SECOND // 2
        engine.stop()


@pytest.mark.parametrize("script", [drip, half_chunk])
def test_no_data_for_the_idle_timeout_is_a_timeout(script):
    with ScriptServer(script) as srv:
        engine = _core.ClientEngine("127.0.0.1", srv.port, idle_timeout_ns=SECOND // 4)
        engine.submit(1, chat_request(srv.port), "openai-chat")
        r = wait_results(engine, 1)[1]
        assert r.error == "timeout" and "read timeout" in r.error_detail
        assert r.http.headers_done and not r.http.message_done
        engine.stop()


def test_a_closed_connection_mid_body_is_reported_by_the_recorder():
    with ScriptServer(truncate) as srv:
        engine = _core.ClientEngine("127.0.0.1", srv.port)
        engine.submit(1, chat_request(srv.port), "openai-chat")
        r = wait_results(engine, 1)[1]
        assert r.error is None  # not the transport's: the response is incomplete
        assert r.http.status == 200 and r.http.error is not None and not r.http.message_done
        engine.stop()


def test_max_response_bytes_caps_a_response():
    with pytps.Emulator(ttft_ms=1, itl_us=50) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port, max_response_bytes=2000)
        engine.submit(1, chat_request(emu.port, tokens=200), "openai-chat")
        r = wait_results(engine, 1)[1]
        assert r.error == "client" and "max_response_bytes" in r.error_detail
        engine.stop()


def test_stop_ends_requests_in_flight():
    with ScriptServer(half_chunk) as srv:
        engine = _core.ClientEngine("127.0.0.1", srv.port)
        for i in range(3):
            engine.submit(i, chat_request(srv.port), "openai-chat")
        time.sleep(0.2)
        engine.stop()
        results = {r.id: r for r in engine.collect()}
        assert sorted(results) == [0, 1, 2]
        assert all(r.error == "client" and "stopped" in r.error_detail for r in results.values())
        engine.stop()  # idempotent
        with pytest.raises(ValueError, match="after stop"):
            engine.submit(9, chat_request(srv.port), "openai-chat")


def test_a_scheduled_send_waits_for_its_time():
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port)
        t_sched = _core.now_ns() + 100_000_000
        engine.submit(1, chat_request(emu.port), "openai-chat", t_sched_ns=t_sched)
        r = wait_results(engine, 1)[1]
        assert r.error is None and r.t_send_ns >= t_sched
        engine.stop()


def test_kernel_timestamps_pair_every_read_with_the_kernel_receive_stamp():
    import numpy as np

    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port, kernel_timestamps=True)
        for i in range(3):
            engine.submit(i, chat_request(emu.port, tokens=40), "openai-chat")
        results = wait_results(engine, 3)
        engine.stop()
        plain = _core.ClientEngine("127.0.0.1", emu.port)
        plain.submit(9, chat_request(emu.port, tokens=5), "openai-chat")
        without = wait_results(plain, 1)[9]
        plain.stop()
    for r in results.values():
        assert r.error is None and r.http.recorder.usage["completion_tokens"] == 40
        recv, kernel = r.recv_times_ns, r.recv_kernel_times_ns
        assert len(recv) == len(kernel) > 0
        assert np.all(np.diff(recv) >= 0)
        # The kernel received the bytes after the request went out and before the engine's stamp
        # of the read that took them; a realtime->monotonic mapping off by more would show here.
        assert np.all(kernel >= r.t_send_ns) and np.all(kernel <= recv)
        assert np.all(recv - kernel < 50_000_000)
        # Every event stamp is the stamp of one of these reads.
        assert np.isin(r.http.recorder.output_times_ns, recv).all()
    assert len(without.recv_times_ns) == 0 and len(without.recv_kernel_times_ns) == 0


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="port"):
        _core.ClientEngine("127.0.0.1", 0)
    with pytest.raises(ValueError, match="max_connections"):
        _core.ClientEngine("127.0.0.1", 80, max_connections=0)
    with pytest.raises(ValueError, match="idle_timeout_ns"):
        _core.ClientEngine("127.0.0.1", 80, idle_timeout_ns=0)
    engine = _core.ClientEngine("127.0.0.1", 80)
    with pytest.raises(ValueError, match="unknown dialect"):
        engine.submit(1, b"x", "nope")
    with pytest.raises(ValueError, match="empty"):
        engine.submit(1, b"", "openai-chat")
    engine.stop()


def spec(index: int = 0):
    from pytps.transport import RequestSpec

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "max_tokens": 4, "stream_options": {"include_usage": True}}).encode()
    return RequestSpec(index=index, path="/v1/chat/completions", body=body, headers={}, dialect="openai-chat")


def test_native_transport_records_a_refused_port_and_a_stream():
    from pytps.transport.native_transport import NativeTransport

    async def main(base_url: str) -> list:
        transport = NativeTransport(base_url)
        try:
            return [await transport.send(spec(i)) for i in range(2)]
        finally:
            await transport.aclose()

    refused = asyncio.run(main(f"http://127.0.0.1:{free_port()}"))
    assert [r.error for r in refused] == ["connect", "connect"]
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        records = asyncio.run(main(emu.base_url))
    for rec in records:
        assert rec.ok and rec.transport == "native" and rec.usage["completion_tokens"] == 4
        assert rec.t_submit_ns <= rec.t_send_ns < rec.t_headers_ns <= rec.first_output_ns <= rec.t_done_ns
    assert "connect" in records[0].phases_ns and "connect" not in records[1].phases_ns


def test_native_transport_survives_a_cancelled_send():
    from pytps.transport.native_transport import NativeTransport

    async def main(port: int) -> None:
        transport = NativeTransport(f"http://127.0.0.1:{port}")
        task = asyncio.create_task(transport.send(spec()))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await transport.aclose()  # stops the engine with the request still open

    with ScriptServer(half_chunk) as srv:
        asyncio.run(main(srv.port))


def test_native_is_the_default_for_plain_http_without_a_proxy(monkeypatch):
    from pytps.errors import ConfigError
    from pytps.runner.config import make_config
    from pytps.transport.registry import choose_transport

    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert choose_transport(make_config("http://127.0.0.1:1")) == "native"
    assert choose_transport(make_config("http://127.0.0.1:1", http2=True)) == "httpx"
    assert choose_transport(make_config("http://127.0.0.1:1", transport="asyncio")) == "asyncio"
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert choose_transport(make_config("http://10.1.2.3:8000")) == "httpx"  # only httpx honours proxies
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert choose_transport(make_config("http://10.1.2.3:8000")) == "native"
    assert choose_transport(make_config("http://127.0.0.1:1", transport="native")) == "native"
    with pytest.raises(ConfigError, match="native transport speaks HTTP/1.1"):
        choose_transport(make_config("http://127.0.0.1:1", transport="native", http2=True))
    # https:// needs the native core's TLS (tests/transport/test_tls.py runs it); auto picks native then too.
    if _core.TLS_AVAILABLE:
        assert choose_transport(make_config("https://example.invalid", transport="native")) == "native"
        assert choose_transport(make_config("https://example.invalid")) == "native"
    else:
        with pytest.raises(ConfigError, match="libssl-dev"):
            choose_transport(make_config("https://example.invalid", transport="native"))
        assert choose_transport(make_config("https://example.invalid")) == "httpx"
    with pytest.raises(ConfigError, match="--kernel-timestamps needs the native transport"):
        choose_transport(make_config("http://127.0.0.1:1", transport="asyncio", kernel_timestamps=True))


def test_the_read_floor_paces_and_reads_every_message():
    f = _core.measure_read_floor(connections=4, gap_ns=2_000_000, duration_ns=200_000_000, message_bytes=100)
    assert f["messages"] == 4 * 100  # each connection every 2 ms for 200 ms
    assert 0 < f["reads"] <= f["messages"] and f["wakeups"] >= 1
    assert f["reader_cpu_ns"] > 0 and f["duration_ns"] == 200_000_000
    assert f["reader_cpu_ns_per_message"] == pytest.approx(f["reader_cpu_ns"] / f["messages"])
    with pytest.raises(ValueError, match="connections"):
        _core.measure_read_floor(connections=0)


def test_submit_many_hands_over_a_batch_and_names_a_bad_item():
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        engine = _core.ClientEngine("127.0.0.1", emu.port, max_connections=4)
        engine.submit_many([(i, chat_request(emu.port, tokens=3), "openai-chat", None) for i in range(6)])
        results = wait_results(engine, 6)
        assert sorted(results) == list(range(6))
        assert all(r.error is None and r.http.recorder.usage["completion_tokens"] == 3 for r in results.values())
        with pytest.raises(ValueError, match="item 1: unknown dialect"):
            engine.submit_many([(10, b"x", "openai-chat", None), (11, b"x", "nope", None)])
        with pytest.raises(ValueError, match="item 0: expected"):
            engine.submit_many([(10, b"x")])
        engine.stop()
        with pytest.raises(ValueError, match="after stop"):
            engine.submit_many([(12, b"x", "openai-chat", None)])
    assert not engine.collect()  # the refused batch left nothing behind
