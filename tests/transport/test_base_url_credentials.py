"""Issue 40, defect 11: a base URL's userinfo and query on the wire, on every transport, seen from
a raw socket server on 127.0.0.1 (tests/fault_servers.py records each request's head).

- the Host header never carries user:password@;
- the base URL's query (Azure's ?api-version=) is kept on every request path;
- userinfo becomes Basic auth only where no API key is given; with one, make_config refuses in one
  line, and a transport never lets the userinfo replace the key's header."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from fault_servers import FaultServer, ok

from pytps.errors import ConfigError
from pytps.runner.config import make_config
from pytps.runner.endpoint import Endpoint
from pytps.transport import RequestSpec, Timeouts
from pytps.transport.base_url import BaseUrl

TRANSPORTS = ("native", "asyncio", "httpx")


def _transport(name: str, url: str):
    timeouts = {"timeouts": Timeouts(connect_s=5.0, read_s=5.0)}
    if name == "native":
        from pytps.transport.native_transport import NativeTransport

        return NativeTransport(url, **timeouts)
    if name == "asyncio":
        from pytps.transport.asyncio_transport import AsyncioTransport

        return AsyncioTransport(url, **timeouts)
    from pytps.transport.httpx_transport import HttpxTransport

    return HttpxTransport(url, **timeouts)


def _send(name: str, url: str, headers: dict[str, str]):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    spec = RequestSpec(
        index=0, path="/v1/chat/completions", body=json.dumps(body).encode(), headers=headers, dialect="openai-chat"
    )

    async def go():
        t = _transport(name, url)
        try:
            return await t.send(spec)
        finally:
            await t.aclose()

    return asyncio.run(go())


def _line_and_headers(srv: FaultServer) -> tuple[str, dict[str, str]]:
    assert len(srv.requests) == 1
    req = srv.requests[0]
    return req.head.split(b"\r\n")[0].decode("latin-1"), req.headers


def _url(srv: FaultServer, userinfo: str = "alice:PASSWORD999@", query: str = "?api-version=2024-06-01") -> str:
    return f"http://{userinfo}127.0.0.1:{srv.port}/v1{query}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_host_header_never_carries_userinfo_and_the_query_is_kept(transport):
    with FaultServer(ok) as srv:
        rec = _send(transport, _url(srv), {})
    assert rec.error is None, rec.error_detail
    line, headers = _line_and_headers(srv)
    assert headers["host"] == f"127.0.0.1:{srv.port}"
    assert line == "POST /v1/v1/chat/completions?api-version=2024-06-01 HTTP/1.1"
    assert "PASSWORD999" not in line and "alice" not in headers["host"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_userinfo_is_basic_auth_without_an_api_key(transport):
    with FaultServer(ok) as srv:
        _send(transport, _url(srv, query=""), {})
    _, headers = _line_and_headers(srv)
    assert headers["authorization"] == "Basic " + base64.b64encode(b"alice:PASSWORD999").decode()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_userinfo_never_replaces_an_api_keys_header(transport):
    with FaultServer(ok) as srv:
        _send(transport, _url(srv, query="?api_key=SECRET456"), {"Authorization": "Bearer sk-KEY"})
    line, headers = _line_and_headers(srv)
    assert headers["authorization"] == "Bearer sk-KEY"
    assert line == "POST /v1/v1/chat/completions?api_key=SECRET456 HTTP/1.1"
    assert headers["host"] == f"127.0.0.1:{srv.port}"


def test_make_config_refuses_userinfo_with_an_api_key_in_one_line():
    with pytest.raises(ConfigError) as err:
        make_config("http://alice:PASSWORD999@127.0.0.1:9/v1", api_key="sk-secret-key", model="m")
    text = str(err.value)
    assert "\n" not in text and "PASSWORD999" not in text and "sk-secret-key" not in text
    assert "user:password@" in text


def test_make_config_keeps_userinfo_without_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = make_config("http://alice:PASSWORD999@127.0.0.1:9/v1?api-version=1", model="m")
    assert BaseUrl.parse(cfg.base_url).target("/v1/models") == "/v1/models?api-version=1"


def test_the_model_listing_keeps_the_query_and_hides_userinfo():
    def models(srv, conn, reader, req):
        body = json.dumps({"data": [{"id": "served-model"}]}).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        conn.sendall(head + body)
        return True

    with FaultServer(models) as srv:
        endpoint = Endpoint(f"http://bob:PASSWORD999@127.0.0.1:{srv.port}?api-version=7", headers={})
        assert asyncio.run(endpoint.first_model("openai-chat")) == "served-model"
    line, headers = _line_and_headers(srv)
    assert line == "GET /v1/models?api-version=7 HTTP/1.1"
    assert headers["host"] == f"127.0.0.1:{srv.port}"
    assert headers["authorization"] == "Basic " + base64.b64encode(b"bob:PASSWORD999").decode()


def test_base_url_parts():
    url = BaseUrl.parse("https://u:p%40ss@[::1]:8443/openai/deployments/x?api-version=1")
    assert url.host == "::1" and url.port == 8443 and url.host_header == "[::1]:8443"
    assert url.password == "p@ss"
    assert url.target("/v1/x?a=b") == "/openai/deployments/x/v1/x?a=b&api-version=1"
    assert url.origin == "https://[::1]:8443"
    assert BaseUrl.parse("http://h/").host_header == "h"
