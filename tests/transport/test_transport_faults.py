"""The same faults, against real loopback servers (tests/fault_servers.py), through all three
transports: each must end every request with the same error class, lose no request a resend
can save, and never reuse a connection it should not."""

from __future__ import annotations

import asyncio
import json
import socket
from collections import Counter
from typing import Any

import pytest
from fault_servers import (
    GZIP_ERROR,
    FaultServer,
    close_after_each_response,
    early_413,
    free_port,
    gzip_error,
    gzip_stream,
    no_response,
    ok,
    reset_mid_stream,
    stale_on_reuse,
)

from pytps.measure.records import RequestRecord
from pytps.runner.event_loop import run_coroutine
from pytps.transport import RequestSpec, Timeouts

TRANSPORTS = ("native", "asyncio", "httpx")
BIG = 8 << 20  # a request body that cannot all be in flight before the server answers


def make_transport(name: str, url: str) -> Any:
    timeouts = {"timeouts": Timeouts(connect_s=5.0, read_s=5.0)}
    if name == "native":
        from pytps.transport.native_transport import NativeTransport

        return NativeTransport(url, **timeouts)
    if name == "asyncio":
        from pytps.transport.asyncio_transport import AsyncioTransport

        return AsyncioTransport(url, **timeouts)
    from pytps.transport.httpx_transport import HttpxTransport

    return HttpxTransport(url, **timeouts)


def spec(i: int, pad: int = 0) -> RequestSpec:
    body = {"model": "m", "messages": [{"role": "user", "content": f"req-{i} " + "x" * pad}], "stream": True}
    return RequestSpec(
        index=i, path="/v1/chat/completions", body=json.dumps(body).encode(), headers={}, dialect="openai-chat"
    )


async def drive(transport: Any, n: int, concurrency: int, pads: list[int]) -> list[RequestRecord]:
    todo = iter(range(n))
    out: list[RequestRecord] = []

    async def worker() -> None:
        for i in todo:
            out.append(await transport.send(spec(i, pads[i % len(pads)])))

    try:
        await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(concurrency))), 120)
    finally:
        await transport.aclose()
    return sorted(out, key=lambda r: r.index)


def run(name: str, url: str, n: int = 1, concurrency: int = 1, pads: tuple[int, ...] = (0,), uv: bool = True):
    """n requests at this concurrency through a new transport, on uvloop (as the runner) or asyncio."""
    coro = drive(make_transport(name, url), n, concurrency, list(pads))
    return run_coroutine(coro) if uv else asyncio.run(coro)


def classes(records: list[RequestRecord]) -> Counter[str | None]:
    return Counter(r.error for r in records)


def retries(rec: RequestRecord) -> int:
    return int(getattr(rec, "retries", 0))


# name: (handler, host, requests, concurrency, body pads, the classes every transport must report)
MATRIX: dict[str, tuple[Any, str, int, int, tuple[int, ...], dict[str | None, int]]] = {
    "stale keep-alive, closed (FIN)": (stale_on_reuse("fin"), "127.0.0.1", 200, 4, (0,), {None: 200}),
    "stale keep-alive, reset": (stale_on_reuse("rst"), "127.0.0.1", 200, 4, (0,), {None: 200}),
    "closed after each response (llama-server)": (close_after_each_response, "127.0.0.1", 200, 4, (0,), {None: 200}),
    "closed before any byte, new connection": (no_response("fin"), "127.0.0.1", 3, 1, (0,), {"no_response": 3}),
    "reset before any byte, new connection": (no_response("rst"), "127.0.0.1", 3, 1, (0,), {"no_response": 3}),
    "reset mid-stream": (reset_mid_stream, "127.0.0.1", 2, 1, (0,), {"truncated": 2}),
    "early 413 while the body is written": (early_413(False), "127.0.0.1", 2, 1, (BIG,), {"http_413": 2}),
    "gzip error body": (gzip_error, "127.0.0.1", 2, 1, (0,), {"http_500": 2}),
    "gzip event stream": (gzip_stream, "127.0.0.1", 2, 1, (0,), {"protocol": 2}),
    "connection refused": (None, "127.0.0.1", 2, 1, (0,), {"connect": 2}),
    "server on ::1 only": (ok, "::1", 2, 1, (0,), {None: 2}),
    "server on 127.0.0.1 only": (ok, "127.0.0.1", 2, 1, (0,), {None: 2}),
}


def run_scenario(transport: str, name: str, uv: bool = True) -> tuple[list[RequestRecord], FaultServer | None]:
    handler, host, n, concurrency, pads, _ = MATRIX[name]
    if handler is None:
        return run(transport, f"http://{host}:{free_port(host)}", n, concurrency, pads, uv), None
    with FaultServer(handler, host) as srv:
        return run(transport, srv.url, n, concurrency, pads, uv), srv


@pytest.mark.parametrize(
    ("transport", "loop"),
    [("native", "uvloop"), ("asyncio", "uvloop"), ("asyncio", "asyncio"), ("httpx", "uvloop"), ("httpx", "asyncio")],
)
def test_the_fault_matrix_gives_the_same_classes_on_every_transport(transport, loop):
    got: dict[str, dict[str | None, int]] = {}
    details: dict[str, list[str]] = {}
    for name in MATRIX:
        records, _ = run_scenario(transport, name, uv=loop == "uvloop")
        got[name] = dict(classes(records))
        details[name] = sorted({r.error_detail or "" for r in records if r.error})[:3]
    want = {name: row[-1] for name, row in MATRIX.items()}
    wrong = {name: (got[name], details[name]) for name in MATRIX if got[name] != want[name]}
    assert not wrong, f"{transport}: scenario -> (classes, details) that differ from {want}:\n" + "\n".join(
        f"  {k}: {v}" for k, v in wrong.items()
    )


@pytest.mark.parametrize("how", ["fin", "rst"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stale_keep_alive_request_is_sent_again_on_a_new_connection(transport, how):
    with FaultServer(stale_on_reuse(how)) as srv:
        records = run(transport, srv.url, 200, 4)
    assert classes(records) == {None: 200}, [r.error_detail for r in records if r.error][:3]
    # Every connection served exactly one response, so every resend went on a new one (a resend
    # on another pooled connection would have been met by the fault again, and show here).
    stale = [r for r in srv.requests if r.index_on_conn == 1]
    assert srv.connections == 200
    assert sum(retries(r) for r in records) == len(stale) > 0
    assert max(retries(r) for r in records) == 1
    # t_send is the resend's: after the server had the first attempt.
    first_seen: dict[str, int] = {}
    for req in srv.requests:
        first_seen.setdefault(req.tag or "", req.t_ns)
    for rec in records:
        if retries(rec):
            assert rec.t_send_ns > first_seen[str(rec.index)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_resend_that_fails_too_is_no_response(transport):
    def handler(srv, conn, reader, req):
        if req.conn_no == 0 and req.index_on_conn == 0:
            return ok(srv, conn, reader, req)
        return no_response("rst")(srv, conn, reader, req)

    with FaultServer(handler) as srv:
        records = run(transport, srv.url, 2, 1)
    assert [r.error for r in records] == [None, "no_response"], [r.error_detail for r in records]
    assert [retries(r) for r in records] == [0, 1]
    assert srv.connections == 2  # the first, then one new connection for the resend
    assert "no byte of a response" in (records[1].error_detail or "")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_request_not_fully_written_never_leaves_its_connection_for_reuse(transport):
    # The server answers 413 keeping the connection alive, while most of the body is unsent.
    with FaultServer(early_413(True)) as srv:
        records = run(transport, srv.url, 2, 1, pads=(BIG, 0))
    assert [r.error for r in records] == ["http_413", None], [r.error_detail for r in records]
    assert [retries(r) for r in records] == [0, 0]
    assert srv.connections == 2
    assert [(r.conn_no, r.index_on_conn) for r in srv.requests] == [(0, 0), (1, 0)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_identity_is_asked_for_and_a_gzip_body_is_decoded_or_rejected(transport):
    with FaultServer(gzip_error) as srv:
        (err,) = run(transport, srv.url)
    assert [r.headers.get("accept-encoding") for r in srv.requests] == ["identity"]
    assert err.error == "http_500"
    assert err.error_detail == GZIP_ERROR.decode()  # decoded for the report
    with FaultServer(gzip_stream) as srv:
        (stream,) = run(transport, srv.url)
    assert stream.error == "protocol" and stream.status == 200
    assert "Content-Encoding: gzip" in (stream.error_detail or "")
    assert "identity" in (stream.error_detail or "")


DUAL = "dual-stack.test"


def fake_resolver(order: list[str]):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        name = host.decode() if isinstance(host, bytes) else host  # anyio passes the IDNA bytes
        if name not in ("localhost", DUAL):
            return real(host, port, family, type, proto, flags)
        out = []
        for ip in order:
            fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
            if family in (0, socket.AF_UNSPEC, fam):
                addr = (ip, int(port), 0, 0) if fam == socket.AF_INET6 else (ip, int(port))
                out.append((fam, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", addr))
        return out

    return getaddrinfo


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", ["localhost", DUAL])
def test_every_resolved_address_is_tried_in_order(transport, host, monkeypatch):
    # localhost has no ::1 in this machine's /etc/hosts: the resolver is made to answer ::1 first
    # (as many systems do) for a server that listens on 127.0.0.1 only, and the other way round.
    for listen, order in (("127.0.0.1", ["::1", "127.0.0.1"]), ("::1", ["127.0.0.1", "::1"])):
        monkeypatch.setattr(socket, "getaddrinfo", fake_resolver(order))
        with FaultServer(ok, listen) as srv:
            records = run(transport, f"http://{host}:{srv.port}", 3, 1, uv=False)
        assert classes(records) == {None: 3}, (listen, [r.error_detail for r in records])
        assert srv.connections == 1


@pytest.mark.parametrize("transport", ["native", "httpx"])  # the asyncio transport speaks http:// only
def test_a_stale_kept_alive_tls_connection_is_sent_again_on_a_new_one(transport, tmp_path):
    # Over TLS the stale connection ends with close_notify (the forwarder's, as its upstream
    # closed) before any byte of a response.
    import ssl

    trustme = pytest.importorskip("trustme")
    from tls_proxy import TlsProxy

    from pytps._native import _core

    if transport == "native" and not _core.TLS_AVAILABLE:
        pytest.skip("this build of the native core has no TLS")
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    with FaultServer(stale_on_reuse("fin")) as srv, TlsProxy(srv.port, ctx) as proxy:
        url = f"https://127.0.0.1:{proxy.port}"
        if transport == "native":
            from pytps.transport.native_transport import NativeTransport

            tr: Any = NativeTransport(url, ca_file=str(ca_file), timeouts=Timeouts(read_s=5.0))
        else:
            from pytps.transport.httpx_transport import HttpxTransport

            tr = HttpxTransport(url, ca_file=str(ca_file), timeouts=Timeouts(read_s=5.0))
        records = run_coroutine(drive(tr, 40, 4, [0]))
    assert classes(records) == {None: 40}, [r.error_detail for r in records if r.error][:3]
    stale = [r for r in srv.requests if r.index_on_conn == 1]
    assert sum(retries(r) for r in records) == len(stale) > 0
    assert srv.connections == 40
