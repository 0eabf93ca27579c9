"""What the HTTP/1.1 transports (asyncio, native) share: the request bytes, and how a
finished HttpStreamRecorder becomes a RequestRecord's status and error class."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..records import ERROR_CLIENT, ERROR_PROTOCOL, ERROR_TIMEOUT, ERROR_TRUNCATED, RequestRecord
from .base import RequestSpec, classify_status, classify_stream


class Http1Target:
    """Where an http:// (or, with tls_ok, https://) base URL points, and how requests to it are rendered."""

    def __init__(self, base_url: str, transport_name: str, *, tls_ok: bool = False) -> None:
        url = urlsplit(base_url)
        if url.scheme not in (("http", "https") if tls_ok else ("http",)):
            if tls_ok:
                raise ValueError(f"the {transport_name} transport needs an http:// or https:// URL, got {base_url!r}")
            raise ValueError(
                f"the {transport_name} transport speaks plain http://; use the httpx transport for https://"
            )
        self.base_url = base_url.rstrip("/")
        self.tls = url.scheme == "https"
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or (443 if self.tls else 80)
        self.prefix = url.path.rstrip("/")
        self.host_header = url.netloc

    def render(self, spec: RequestSpec) -> bytes:
        """The whole request as bytes, so nothing but the write sits between t_send and the wire."""
        head = [
            f"POST {self.prefix}{spec.path} HTTP/1.1",
            f"Host: {self.host_header}",
            "Content-Type: application/json",
            "Accept: text/event-stream",
            f"Content-Length: {len(spec.body)}",
        ]
        head += [f"{k}: {v}" for k, v in spec.headers.items()]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + spec.body


def fill_from_http(rec: RequestRecord, recorder: Any, timeout_detail: str | None = None) -> None:
    """Status, stream read-outs and error class from a closed HttpStreamRecorder.

    timeout_detail: the transport gave up waiting (error class "timeout", whatever was read)."""
    rec.t_headers_ns = recorder.t_headers_ns
    rec.status = recorder.status
    rec.fill_from_recorder(recorder.recorder)
    if timeout_detail is not None:
        rec.error, rec.error_detail = ERROR_TIMEOUT, timeout_detail
    elif recorder.error is not None and not recorder.closed_early:
        # Bytes that break HTTP/1.1 framing (a 1 GiB header, a bad chunk size): the response
        # cannot be read, whatever its status said.
        rec.error, rec.error_detail = ERROR_PROTOCOL, recorder.error
    elif recorder.error is not None:
        rec.error, rec.error_detail = ERROR_TRUNCATED if recorder.status else ERROR_CLIENT, recorder.error
    elif rec.status is None:
        rec.error, rec.error_detail = ERROR_TRUNCATED, "the connection closed before a response"
    elif rec.status >= 300:
        classify_status(rec, rec.status, recorder.error_body)
    else:
        classify_stream(rec, recorder.recorder.error)
