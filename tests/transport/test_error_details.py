"""Errors that say what happened: a non-stream 2xx names its content type and first bytes, a
redirect names its Location, an exception without a message is described."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fault_servers import FaultServer
from hostile import html_login, redirect

from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.transport.base import describe_exception

TRANSPORTS = ("native", "asyncio", "httpx")


def _one(url: str, transport: str, tmp_path):
    cfg = make_config(url, model="m", requests=1, output_tokens=4, input_tokens=8, transport=transport,
                      out=tmp_path / transport)
    return asyncio.run(Runner(cfg, keep_records=True).run()).records[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_html_page_is_named_with_its_first_bytes(transport, tmp_path):
    with FaultServer(html_login) as srv:
        rec = _one(srv.url, transport, tmp_path)
    assert rec.error == "protocol"
    assert rec.error_detail.startswith("server answered text/html, not text/event-stream: '<html><head><title>Sign in")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_redirect_names_its_location(transport, tmp_path):
    with FaultServer(redirect) as srv:
        rec = _one(srv.url, transport, tmp_path)
    assert rec.error == "http_302"
    assert "redirected to http://elsewhere.invalid/login" in rec.error_detail
    assert "does not follow redirects" in rec.error_detail


def test_an_empty_exception_message_is_described():
    assert describe_exception(httpx.ReadError("")) == (
        "ReadError: the connection failed while reading the response (connection reset by peer, or closed)"
    )
    try:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError as inner:
            raise httpx.ReadError("") from inner
    except httpx.ReadError as exc:
        assert describe_exception(exc) == "ReadError: [Errno 104] Connection reset by peer"
    assert describe_exception(ValueError("bad")) == "ValueError: bad"
