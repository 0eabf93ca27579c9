"""What the HTTP/1.1 transports (asyncio, native) share: the request bytes, the server's
addresses, and how a finished HttpStreamRecorder becomes a RequestRecord's status and error class."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from pytps.measure.records import ERROR_PROTOCOL, ERROR_TIMEOUT, ERROR_TRUNCATED, RequestRecord
from pytps.transport.base import (
    REQUEST_ID_HEADERS,
    RequestSpec,
    classify_answer,
    classify_compressed,
    content_coding,
)
from pytps.transport.base_url import BaseUrl
from pytps.transport.network import resolver_host

# Request heads kept per (path, headers) by Http1Target.render.
_MAX_HEADS = 64


class Http1Target:
    """Where an http:// (or, with tls_ok, https://) base URL points, and how requests to it are rendered."""

    def __init__(self, base_url: str, transport_name: str, *, tls_ok: bool = False) -> None:
        url = BaseUrl.parse(base_url)
        if url.scheme not in (("http", "https") if tls_ok else ("http",)):
            if tls_ok:
                raise ValueError(f"the {transport_name} transport needs an http:// or https:// URL, got {base_url!r}")
            raise ValueError(
                f"the {transport_name} transport speaks plain http://; use the httpx transport for https://"
            )
        self.url = url
        self.base_url = base_url.rstrip("/")
        self.tls = url.tls
        self.host = url.host or "127.0.0.1"
        self.port = url.port
        self.host_header = url.host_header  # never the userinfo (transport/base_url)
        self._heads: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}

    def render(self, spec: RequestSpec) -> bytes:
        """The whole request as bytes, so nothing but the write sits between t_send and the wire."""
        # The head is the same for every request with the same path and headers but for its
        # Content-Length: its two parts are made once per (path, headers) and kept (issue 42:
        # ~2% of a short request's client CPU). A run whose every request has headers of its own
        # (--request-id-header) would fill the cache for nothing: it is emptied when full.
        key = (spec.path, *spec.headers.items())
        parts = self._heads.get(key)
        if parts is None:
            if len(self._heads) >= _MAX_HEADS:
                self._heads.clear()
            parts = self._heads[key] = self._head_parts(spec.path, spec.headers)
        before, after = parts
        return before + str(len(spec.body)).encode() + after + spec.body

    def _head_parts(self, path: str, headers: dict[str, str]) -> tuple[bytes, bytes]:
        """The head's bytes before and after Content-Length's value."""
        head = [f"POST {self.url.target(path)} HTTP/1.1", f"Host: {self.host_header}"]
        # JSON unless the spec says otherwise (a multipart upload of audio to transcribe).
        if not any(k.lower() == "content-type" for k in headers):
            head.append("Content-Type: application/json")
        head += ["Accept: text/event-stream", "Content-Length: "]
        before = "\r\n".join(head).encode("latin-1")
        head = [""]
        # A compressed stream cannot be timed event by event, and a size cap would count decoded
        # bytes: ask for none (a server that compresses anyway is reported, see fill_from_http).
        if not any(k.lower() == "accept-encoding" for k in headers):
            head.append("Accept-Encoding: identity")
        head += [f"{k}: {v}" for k, v in headers.items()]
        head += [f"{k}: {v}" for k, v in self.url.auth_for(headers).items()]
        return before, ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")


def resolve(host: str, port: int) -> list[str]:
    """host's IP addresses in getaddrinfo's order, each once: a transport tries them in turn
    until one connects (a host may resolve to ::1 first while the server listens on 127.0.0.1
    only). Raises OSError (socket.gaierror) when nothing resolves."""
    out: list[str] = []
    for family, _, _, _, addr in socket.getaddrinfo(resolver_host(host), port, type=socket.SOCK_STREAM):
        if family in (socket.AF_INET, socket.AF_INET6) and addr[0] not in out:
            out.append(str(addr[0]))
    if not out:
        raise socket.gaierror(f"{host} has no IPv4 or IPv6 address")
    return out


def address_text(ip: str, port: int) -> str:
    """ip:port as a URL writes it ([::1]:8000), for error details."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def fill_from_http(rec: RequestRecord, recorder: Any, timeout_detail: str | None = None) -> None:
    """Status, stream read-outs and error class from a closed HttpStreamRecorder.

    timeout_detail: the transport gave up waiting (error class "timeout", whatever was read)."""
    fill_from_response(rec, recorder.readout(REQUEST_ID_HEADERS), recorder.header, timeout_detail)


def fill_from_response(
    rec: RequestRecord,
    readout: tuple[Any, ...],
    header: Callable[[str], str | None],
    timeout_detail: str | None = None,
) -> None:
    """fill_from_http() of the closed HttpStreamRecorder whose readout(REQUEST_ID_HEADERS) this
    is, and whose header() is `header`: a finished response is read in one native call (an
    attribute and a header at a time were ~3 us of a short request's client CPU, issue 42)."""
    (
        rec.t_headers_ns, rec.status, headers_done, request_id, encoding, content_type, error, closed_early,
        error_body, body_start, stream, stream_error,
    ) = readout  # fmt: skip
    if headers_done:
        rec.request_id = request_id
    rec.fill_from_readout(stream)
    coding = content_coding(encoding)
    if timeout_detail is not None:
        rec.error, rec.error_detail = ERROR_TIMEOUT, timeout_detail
    elif error is not None and not closed_early:
        # Bytes that break HTTP/1.1 framing (a 1 GiB header, a bad chunk size): the response
        # cannot be read, whatever its status said.
        rec.error, rec.error_detail = ERROR_PROTOCOL, error
    elif rec.status is not None and rec.status < 300 and coding is not None:
        classify_compressed(rec, coding)
    elif error is not None:
        # Cut short, the head included: the transport tells a response that never began apart
        # (class no_response), since only it knows whether any byte came.
        rec.error, rec.error_detail = ERROR_TRUNCATED, error
    elif rec.status is None:
        rec.error, rec.error_detail = ERROR_TRUNCATED, "the connection closed before a response"
    else:
        classify_answer(rec, rec.status, header, error_body, coding, body_start, stream_error, content_type)
