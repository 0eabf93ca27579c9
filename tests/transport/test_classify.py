"""transport/classify.error_class: the one classifier of the httpx transport and pytps.instrument,
on the real exception classes of the clients it serves (docs/metrics.md, "Errors")."""

from __future__ import annotations

import subprocess
import sys

import httpcore
import httpx
import pytest

from pytps.transport.classify import error_class

httpx2 = pytest.importorskip("httpx2")
httpcore2 = pytest.importorskip("httpcore2")

DISCONNECTED = "Server disconnected without sending a response."


@pytest.mark.parametrize("pkg", [httpx, httpcore, httpx2, httpcore2], ids=lambda m: m.__name__)
def test_the_clients_exceptions_by_class(pkg):
    # Every timeout is `timeout`, a connect timeout included; a refused connection is `connect`.
    for name in ("ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout"):
        assert error_class(getattr(pkg, name)("t"), response_started=False) == "timeout", name
    assert error_class(pkg.ConnectError("refused"), response_started=False) == "connect"
    # The connection ended: before any byte of a response, or while it came.
    for name in ("ReadError", "WriteError"):
        assert error_class(getattr(pkg, name)("reset"), response_started=False) == "no_response", name
        assert error_class(getattr(pkg, name)("reset"), response_started=True) == "truncated", name
    assert error_class(pkg.RemoteProtocolError(DISCONNECTED), response_started=False) == "no_response"
    assert error_class(pkg.RemoteProtocolError("peer closed connection"), response_started=True) == "truncated"
    # Bytes h11 could not parse are the server's protocol error; a request the client could not send is its own.
    assert error_class(pkg.RemoteProtocolError("illegal status line"), response_started=True) == "protocol"
    assert error_class(pkg.LocalProtocolError("bad header"), response_started=False) == "client"
    assert error_class(pkg.UnsupportedProtocol("ftp://"), response_started=False) == "client"


def test_the_standard_librarys_exceptions():
    assert error_class(TimeoutError(), response_started=True) == "timeout"
    assert error_class(ConnectionRefusedError(), response_started=False) == "connect"
    assert error_class(ConnectionResetError(), response_started=True) == "truncated"
    assert error_class(BrokenPipeError(), response_started=False) == "no_response"
    assert error_class(ValueError("the application's own"), response_started=True) == "client"


def test_it_imports_no_client_package():
    clients = "{'httpx', 'httpcore', 'httpx2', 'httpcore2'}"
    code = f"import sys, pytps.transport.classify; print(sorted({clients} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
