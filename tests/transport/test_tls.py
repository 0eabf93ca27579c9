"""https:// on the native client engine (OpenSSL over memory BIOs) and on httpx, against
pytps.Emulator behind a TLS-terminating forwarder on 127.0.0.1 (tests/tls_proxy.py) with a
throwaway CA from trustme, and against small misbehaving servers made here."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

import pytps
from pytps._native import _core

if not _core.TLS_AVAILABLE:
    pytest.skip("this build of pytps has no TLS in its native core (OpenSSL was not found when it was "
                "compiled: install libssl-dev and rebuild)", allow_module_level=True)

trustme = pytest.importorskip("trustme", reason="trustme makes the test CA: pip install -e '.[test]'")

from test_client_engine import chat_request  # noqa: E402
from test_client_engine import wait_results as engine_results  # noqa: E402
from tls_proxy import TlsProxy  # noqa: E402

from pytps.errors import ConfigError  # noqa: E402
from pytps.runner.config import make_config  # noqa: E402
from pytps.runner.loop import Runner  # noqa: E402
from pytps.transport.base import RequestSpec  # noqa: E402
from pytps.transport.httpx_transport import HttpxTransport  # noqa: E402
from pytps.transport.native_transport import NativeTransport  # noqa: E402
from pytps.transport.registry import choose_transport  # noqa: E402

SECOND = 1_000_000_000


# ---- certificates and servers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca, tmp_path_factory):
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def server_context(ca, *names: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(ctx)
    return ctx


@contextmanager
def https_emulator(ca, *names: str, **emu_settings):
    """The emulator behind a TLS forwarder whose certificate names `names` (default 127.0.0.1)."""
    emu_settings.setdefault("ttft_ms", 5)
    emu_settings.setdefault("itl_us", 500)
    with pytps.Emulator(**emu_settings) as emu, TlsProxy(emu.port, server_context(ca, *(names or ("127.0.0.1",)))) as px:
        yield emu, px, f"https://127.0.0.1:{px.port}"


class RawServer:
    """Accepts TCP connections on 127.0.0.1 and runs script(conn) for each on a thread."""

    def __init__(self, script) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.script = script
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(10)
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self.script(conn, self.stop)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def read_head(conn) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            break
        data += part
    return data


def one_request(port: int, timeout_s: float = 15.0, **engine_options):
    engine = _core.ClientEngine("127.0.0.1", port, tls=True, **engine_options)
    try:
        engine.submit(1, chat_request(port), "openai-chat")
        return engine_results(engine, 1, timeout_s)[1]
    finally:
        engine.stop()


def spec(i: int = 0) -> RequestSpec:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "max_tokens": 4, "stream_options": {"include_usage": True}}).encode()
    return RequestSpec(index=i, path="/v1/chat/completions", body=body, headers={}, dialect="openai-chat")


async def send_once(transport, i: int = 0):
    try:
        return await transport.send(spec(i))
    finally:
        await transport.aclose()


# ---- a benchmark over https ------------------------------------------------------------------

def test_a_streamed_run_over_https_counts_exact_tokens_on_native_and_httpx_alike(ca, ca_file, tmp_path):
    measured = {}
    for transport in ("native", "httpx"):
        with https_emulator(ca) as (emu, px, url):
            cfg = make_config(url, transport=transport, ca_bundle=ca_file, concurrency=2, requests=6,
                              output_tokens=12, input_tokens=32, out=tmp_path / transport)
            assert choose_transport(cfg) == transport
            result = asyncio.run(Runner(cfg, keep_records=True).run())
            truth = {t["id"]: t for t in emu.wait_truth(len(result.records))}
        s = result.summary
        assert s["requests_ok"] == 6 and s["error_rate"] == 0, [r.error_detail for r in result.records]
        assert s["output_tokens_total"] == 6 * 12
        for rec in result.records:
            t = truth[rec.response_id]
            assert rec.usage["completion_tokens"] == t["output_tokens"] == 12
            assert len(rec.output_times_ns) == len(t["sent_ns"])
            # Every stamp is a read after the send, in order.
            assert rec.t_send_ns < rec.first_output_ns <= rec.output_times_ns[-1] <= rec.t_done_ns
        md = result.metadata
        assert md["transport"] == transport
        assert md["endpoint"]["scheme"] == "https"
        assert md["tls"]["verify"] is True and md["tls"]["ca_bundle"] == ca_file
        expected_lib = _core.tls_library_version() if transport == "native" else ssl.OPENSSL_VERSION
        assert md["tls"]["library"] == expected_lib and "OpenSSL" in expected_lib
        # Two users, two connections: each new one records its TLS handshake (httpx's trace phase
        # "tls"). httpx may have made one of them for the model listing, outside any record.
        handshakes = [r.phases_ns["tls"] for r in result.records if "tls" in r.phases_ns]
        assert len(handshakes) == (2 if transport == "native" else len(handshakes)) and 1 <= len(handshakes) <= 2
        assert all(h > 0 for h in handshakes)
        assert all("connect" in r.phases_ns for r in result.records if "tls" in r.phases_ns)
        measured[transport] = sorted(len(r.output_times_ns) for r in result.records)
    assert measured["native"] == measured["httpx"]
    saved = json.loads((tmp_path / "native" / "results.json").read_text())
    assert saved["metadata"]["tls"]["library"] == _core.tls_library_version()


def test_sequential_requests_reuse_one_tls_connection(ca, ca_file):
    with https_emulator(ca) as (emu, px, url):
        engine = _core.ClientEngine("127.0.0.1", px.port, tls=True, ca_file=ca_file)
        results = []
        for i in range(5):
            engine.submit(i, chat_request(px.port, tokens=20), "openai-chat")
            results.append(engine_results(engine, 1)[i])
        engine.stop()
        truth = emu.wait_truth(5)
    assert engine.connections_opened == 1 and px.connections == 1
    for r in results:
        assert r.error is None, r.error_detail
        assert r.http.status == 200 and r.http.message_done and r.http.keep_alive
        assert r.http.recorder.done
    assert sorted(r.http.recorder.usage["completion_tokens"] for r in results) == [t["output_tokens"] for t in truth]
    # The handshake (and connect) belong to the first request only.
    assert results[0].tls_ns > 0 and results[0].connect_ns >= 0
    assert all(r.tls_ns is None and r.connect_ns is None for r in results[1:])


def test_kernel_timestamps_cover_the_events_read_over_tls(ca, ca_file):
    import numpy as np

    with https_emulator(ca) as (emu, px, url):
        engine = _core.ClientEngine("127.0.0.1", px.port, tls=True, ca_file=ca_file, kernel_timestamps=True)
        engine.submit(1, chat_request(px.port, tokens=20), "openai-chat")
        r = engine_results(engine, 1)[1]
        engine.stop()
    assert r.error is None and r.http.recorder.usage["completion_tokens"] == 20
    # Each event carries the stamp of the raw (ciphertext) read it was decrypted from, and that
    # read's kernel stamp is kept beside it.
    events = r.http.recorder.output_times_ns
    assert np.isin(events, r.recv_times_ns).all()
    assert np.all(r.recv_kernel_times_ns <= r.recv_times_ns)
    # The reads that carried events had their bytes after the request went out. (A TLS 1.3
    # session ticket can arrive just before the send and be read just after: a read whose
    # kernel stamp precedes t_send, carrying no event.)
    carried = np.isin(r.recv_times_ns, events)
    assert np.all(r.recv_kernel_times_ns[carried] >= r.t_send_ns)


def test_a_run_over_tls_keeps_its_connection_alive(ca, ca_file, tmp_path):
    with https_emulator(ca) as (emu, px, url):
        # With the model named, no model listing (by httpx) opens a connection of its own.
        cfg = make_config(url, transport="native", ca_bundle=ca_file, concurrency=1, requests=4,
                          output_tokens=5, model="m", out=tmp_path / "out")
        result = asyncio.run(Runner(cfg, keep_records=True).run())
    assert result.summary["requests_ok"] == 4
    # The run's one connection, and the one that asks the server's facts after the run
    # (pytps.runner.provenance: its own client, after the timing ended).
    assert px.connections == 2
    assert sum("tls" in r.phases_ns for r in result.records) == 1


# ---- trust -----------------------------------------------------------------------------------

def test_an_untrusted_certificate_fails_to_connect_and_says_why(ca):
    with https_emulator(ca) as (emu, px, url):
        r = one_request(px.port)  # the system's CAs do not include the test CA
        assert r.error == "connect"
        assert "certificate verification failed" in r.error_detail
        assert "unable to get local issuer certificate" in r.error_detail  # OpenSSL's own words
        assert "--ca-bundle" in r.error_detail and "--insecure" in r.error_detail
        assert r.t_send_ns is None and r.http.status is None
        # The transports report the same class.
        for transport in (NativeTransport(url), HttpxTransport(url)):
            rec = asyncio.run(send_once(transport))
            assert rec.error == "connect", (transport.name, rec.error_detail)
            assert "--ca-bundle" in rec.error_detail


def test_a_hashed_ca_directory_is_trusted_as_ca_path(ca, tmp_path):
    # ca_path: a directory of CA certificates named by subject hash (`openssl rehash`'s layout),
    # as a distribution's /etc/ssl/certs is.
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command names the certificate by its subject hash; install openssl")
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    subject_hash = subprocess.run([openssl, "x509", "-hash", "-noout", "-in", str(pem)],
                                  capture_output=True, text=True, check=True).stdout.strip()
    certs = tmp_path / "certs"
    certs.mkdir()
    shutil.copy(pem, certs / f"{subject_hash}.0")
    with https_emulator(ca) as (emu, px, url):
        r = one_request(px.port, ca_path=str(certs))
        assert r.error is None and r.http.status == 200, r.error_detail
        assert one_request(px.port, ca_path=str(tmp_path)).error == "connect"  # no hashed names there


def test_a_bundled_openssl_trusts_the_store_python_finds(ca, ca_file, tmp_path, monkeypatch):
    # A wheel's OpenSSL (TLS_BUNDLED) was built on another machine: its own default paths may not
    # exist here, so the native transport passes the CA store Python's ssl finds. Here Python's
    # ssl "finds" the test CA; OpenSSL's own default paths (the system's store) do not hold it.
    paths = ssl.DefaultVerifyPaths(ca_file, str(tmp_path / "none"), "SSL_CERT_FILE", ca_file, "SSL_CERT_DIR", "")
    monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: paths)
    with https_emulator(ca) as (emu, px, url):
        monkeypatch.setattr(_core, "TLS_BUNDLED", True)
        rec = asyncio.run(send_once(NativeTransport(url)))
        assert rec.error is None and rec.status == 200, rec.error_detail
        monkeypatch.setattr(_core, "TLS_BUNDLED", False)  # a build on the system's OpenSSL: its own paths
        assert asyncio.run(send_once(NativeTransport(url))).error == "connect"


def test_insecure_skips_verification(ca, tmp_path):
    for transport in ("native", "httpx"):
        with https_emulator(ca) as (emu, px, url):
            cfg = make_config(url, transport=transport, insecure=True, requests=3, output_tokens=6,
                              out=tmp_path / transport)
            result = asyncio.run(Runner(cfg, keep_records=True).run())
        assert result.summary["requests_ok"] == 3 and result.summary["output_tokens_total"] == 18
        assert result.metadata["tls"]["verify"] is False


def test_a_certificate_for_another_name_fails(ca, ca_file):
    with https_emulator(ca, "pytps.test") as (emu, px, url):
        # By address: the certificate names no IP address.
        r = one_request(px.port, ca_file=ca_file)
        assert r.error == "connect" and "IP address mismatch" in r.error_detail, r.error_detail
        # By a name the certificate does not hold.
        r = one_request(px.port, ca_file=ca_file, server_name="other.test")
        assert r.error == "connect" and "hostname mismatch" in r.error_detail, r.error_detail
        # The right name verifies, and goes out as SNI (an address never does).
        r = one_request(px.port, ca_file=ca_file, server_name="pytps.test")
        assert r.error is None and r.http.status == 200, r.error_detail
        assert px.server_names == [None, "other.test", "pytps.test"]
        rec = asyncio.run(send_once(HttpxTransport(url, ca_file=ca_file)))
        assert rec.error == "connect"


# ---- broken servers --------------------------------------------------------------------------

def test_a_server_that_closes_mid_handshake_is_a_connect_error_not_a_hang():
    def close_after_hello(conn, stop):
        conn.recv(65536)  # the ClientHello

    with RawServer(close_after_hello) as srv:
        t0 = time.monotonic()
        r = one_request(srv.port, connect_timeout_ns=10 * SECOND)
        assert time.monotonic() - t0 < 5
    assert r.error == "connect"
    assert "closed the connection during the TLS handshake" in r.error_detail


def test_a_plain_http_server_spoken_to_with_https_is_a_clear_connect_error():
    def plain_http(conn, stop):
        conn.recv(65536)  # not an HTTP request: a real server answers 400 and closes
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    with RawServer(plain_http) as srv:
        r = one_request(srv.port)
    assert r.error == "connect"
    assert "TLS handshake failed" in r.error_detail and "http://" in r.error_detail, r.error_detail


def test_a_silent_plain_http_server_times_out_within_the_connect_timeout():
    # The emulator waits for a request head that a ClientHello never completes.
    with pytps.Emulator() as emu:
        t0 = time.monotonic()
        r = one_request(emu.port, connect_timeout_ns=SECOND // 2)
        took = time.monotonic() - t0
    assert r.error == "timeout" and 0.4 < took < 5
    assert "TLS handshake did not finish" in r.error_detail and "http://" in r.error_detail


@pytest.mark.parametrize("close_notify", [True, False], ids=["close_notify", "plain_eof"])
def test_a_peer_close_ends_an_eof_framed_response_as_on_plain_http(ca, ca_file, close_notify):
    ctx = server_context(ca, "127.0.0.1")
    events = [{"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": w}}]}
              for w in ("a", "b", "c")]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"

    def eof_framed(conn, stop):
        tls = ctx.wrap_socket(conn, server_side=True)
        read_head(tls)
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body)
        if close_notify:
            tls.unwrap()  # sends close_notify
        else:
            tls.shutdown(socket.SHUT_RDWR)  # TCP FIN without close_notify

    with RawServer(eof_framed) as srv:
        r = one_request(srv.port, ca_file=ca_file)
    assert r.error is None, r.error_detail
    assert r.http.status == 200 and r.http.message_done and r.http.error is None
    assert r.http.recorder.done and len(r.http.recorder.output_times_ns) == 3


def test_a_kept_alive_tls_connection_the_server_closed_is_replaced(ca, ca_file):
    ctx = server_context(ca, "127.0.0.1")
    body = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n'

    def one_then_close(conn, stop):
        tls = ctx.wrap_socket(conn, server_side=True)
        read_head(tls)
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(0.2)
        tls.unwrap()  # close_notify on the idle, kept-alive connection

    with RawServer(one_then_close) as srv:
        engine = _core.ClientEngine("127.0.0.1", srv.port, tls=True, ca_file=ca_file)
        engine.submit(1, chat_request(srv.port), "openai-chat")
        first = engine_results(engine, 1)[1]
        time.sleep(0.5)
        engine.submit(2, chat_request(srv.port), "openai-chat")
        second = engine_results(engine, 1)[2]
        engine.stop()
    for r in (first, second):
        assert r.error is None and r.http.status == 200 and r.http.recorder.done, r.error_detail
    assert engine.connections_opened == 2
    assert second.tls_ns is not None  # a new connection, a new handshake


# ---- settings --------------------------------------------------------------------------------

def test_engine_options_are_checked(ca_file, tmp_path):
    with pytest.raises(ValueError, match="cannot load the CA bundle"):
        _core.ClientEngine("127.0.0.1", 1, tls=True, ca_file=str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match="tls=True"):
        _core.ClientEngine("127.0.0.1", 1, ca_file=ca_file)
    assert _core.tls_library_version().startswith("OpenSSL")


def test_ca_bundle_and_insecure_are_validated_and_native_https_needs_tls(ca_file, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="--ca-bundle"):
        make_config("https://127.0.0.1:1", ca_bundle=tmp_path / "missing.pem")
    with pytest.raises(ConfigError, match="--insecure"):
        make_config("https://127.0.0.1:1", ca_bundle=ca_file, insecure=True)
    cfg = make_config("https://127.0.0.1:1", transport="native", ca_bundle=ca_file)
    assert cfg.ca_bundle == ca_file and choose_transport(cfg) == "native"
    # auto over https:// is native when the build has TLS; --http2 is never native.
    assert choose_transport(make_config("https://127.0.0.1:1")) == "native"
    assert choose_transport(make_config("https://127.0.0.1:1", http2=True)) == "httpx"
    with pytest.raises(ConfigError, match="--http2"):
        choose_transport(make_config("https://127.0.0.1:1", transport="native", http2=True))
    # A build without TLS names the fix.
    monkeypatch.setattr(_core, "TLS_AVAILABLE", False)
    with pytest.raises(ConfigError, match="libssl-dev.*--transport httpx"):
        choose_transport(cfg)
    assert choose_transport(make_config("https://127.0.0.1:1")) == "httpx"  # auto falls back


def test_cli_ca_bundle_and_insecure_flags(ca, ca_file, tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "pytps", "run", *args], capture_output=True, text=True,
                              timeout=120)

    with https_emulator(ca) as (emu, px, url):
        common = ["--base-url", url, "--transport", "native", "--requests", "3", "--output-tokens", "4", "--json"]
        out = cli(*common, "--ca-bundle", ca_file, "--out", str(tmp_path / "a"))
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["requests_ok"] == 3
        out = cli(*common, "--insecure", "--out", str(tmp_path / "b"))
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["requests_ok"] == 3
        # Untrusted: the model listing fails first, in one line that says what to do.
        out = cli(*common, "--out", str(tmp_path / "c"))
        assert out.returncode != 0 and "Traceback" not in out.stderr
        assert "--ca-bundle" in out.stderr and "--insecure" in out.stderr, out.stderr
