"""What a server says about itself, asked in one place for both records of it:

- `server.json`'s `facts` for a launched server (`--serve`, docs/tuning.md): llama-server's /props,
  vLLM's /version, Ollama's /api/version, a user's `--serve-info URL` (server_facts);
- results.json's `metadata.server` after a run (pytps.runner.provenance.server_facts: /version and
  /props, and the `server` header).

Both ask through ask_routes: each route once, every body capped, the whole asking within one
deadline (the timeout is per read, so a server trickling a byte a second would otherwise hold
the caller for ever), and a server that does not answer at all is not asked again. A route the
server lacks is simply absent.

The GETs are h11 over asyncio's streams, not httpx: a run asks these after every benchmark, and
httpx's import (httpcore, anyio, trio when installed, an SSL context even for http://) was the
largest part of a short run's fixed cost (issue 42).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    import ssl

KNOWN = {"llama_server_props": "/props", "vllm_version": "/version", "ollama_version": "/api/version"}
#: The most of a launched server's answer read (llama-server's /props carries its chat template).
MAX_SERVED_BYTES = 4 << 20
#: One route of a launched server may take this long (the routes of one server share no deadline).
SERVED_TIMEOUT_S = 5.0


async def ask_routes(
    urls: Mapping[str, str],
    *,
    verify: bool | str = True,
    timeout_s: float = 2.0,
    deadline_s: float = 2.0,
    max_bytes: int = 65_536,
) -> tuple[str | None, dict[str, bytes]]:
    """GETs each of `urls` ({name: URL}) in order: (the first `server` header any answer carried,
    {name: body} of the 200 answers within max_bytes). No credentials are sent, no proxy is used.
    What was learnt by the deadline is kept; a server (host and port) that did not answer (a
    timeout, a refused or broken connection) is not asked again."""
    bodies: dict[str, bytes] = {}
    header: list[str] = []
    with contextlib.suppress(asyncio.TimeoutError, OSError):
        await asyncio.wait_for(_ask(urls, verify, timeout_s, max_bytes, bodies, header), deadline_s)
    return (header[0] if header else None), bodies


async def _ask(
    urls: Mapping[str, str],
    verify: bool | str,
    timeout_s: float,
    max_bytes: int,
    bodies: dict[str, bytes],
    header: list[str],
) -> None:
    import h11

    silent: set[str] = set()  # the servers that did not answer
    open_: dict[str, _Connection] = {}  # one kept-alive connection per server, as a pooled client keeps
    try:
        for name, url in urls.items():
            parts = urlsplit(url)
            server = parts.netloc
            if server in silent or parts.scheme not in ("http", "https"):
                continue
            try:
                status, server_header, body = await _get(open_, parts, verify, timeout_s, max_bytes)
            except (asyncio.TimeoutError, OSError, ValueError, h11.ProtocolError):
                silent.add(server)  # the caller waits no longer on it
                continue
            if not header and server_header:
                header.append(server_header)
            if status == 200 and body is not None:
                bodies[name] = body
    finally:
        for conn in open_.values():
            conn.close()


class _Connection:
    """One HTTP/1.1 connection: asyncio's streams carry the bytes, h11 frames them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import h11

        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.answered = False  # a response head arrived on it for the current request

    def close(self) -> None:
        self.writer.close()


async def _connect(parts: SplitResult, verify: bool | str, timeout_s: float) -> _Connection:
    tls = _ssl_context(verify) if parts.scheme == "https" else None  # the CA store is loaded only for https
    port = parts.port or (443 if tls else 80)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port, ssl=tls), timeout_s)
    return _Connection(reader, writer)


def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """The transports' trust: the system's CAs, or the bundle given (a PEM file, or a directory
    of hashed certificates), or none at all (--insecure)."""
    import os
    import ssl

    if verify is False:
        return ssl._create_unverified_context()  # --insecure asks for exactly this
    if isinstance(verify, str) and os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)


async def _get(
    open_: dict[str, _Connection], parts: SplitResult, verify: bool | str, timeout_s: float, max_bytes: int
) -> tuple[int, str | None, bytes | None]:
    """(status, the `server` header, the body, or None when larger than max_bytes) of a GET of one
    URL, on the server's kept-alive connection when it has one. A kept-alive connection that the
    server closed before answering is replaced once by a new one."""
    import h11

    for _ in range(2):
        conn = open_.pop(parts.netloc, None)
        reused = conn is not None
        if conn is None:
            conn = await _connect(parts, verify, timeout_s)
        try:
            answer = await _exchange(conn, parts, timeout_s, max_bytes)
        except asyncio.TimeoutError:
            conn.close()
            raise
        except (OSError, h11.ProtocolError):
            conn.close()
            if reused and not conn.answered:
                continue  # closed while it sat idle: asked again on a new connection
            raise
        except BaseException:
            conn.close()  # cancelled at the deadline
            raise
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            open_[parts.netloc] = conn
        else:
            conn.close()  # not at a message's end (a body not read to the end, a closing server)
        return answer
    raise AssertionError("unreachable: a new connection is never retried")


async def _exchange(
    conn: _Connection, parts: SplitResult, timeout_s: float, max_bytes: int
) -> tuple[int, str | None, bytes | None]:
    import h11

    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    if parts.port:
        host += f":{parts.port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # No credentials, and no compression: the body is read as sent, up to max_bytes.
    headers = [("Host", host), ("Accept", "*/*"), ("Accept-Encoding", "identity"), ("User-Agent", "pytps")]
    conn.answered = False
    conn.writer.write(conn.h11.send(h11.Request(method="GET", target=target, headers=headers)) or b"")
    conn.writer.write(conn.h11.send(h11.EndOfMessage()) or b"")
    await asyncio.wait_for(conn.writer.drain(), timeout_s)
    status = 0
    server_header: str | None = None
    body = bytearray()
    while True:
        event = conn.h11.next_event()
        if event is h11.NEED_DATA:
            conn.h11.receive_data(await asyncio.wait_for(conn.reader.read(65_536), timeout_s))
        elif isinstance(event, h11.Response):
            conn.answered = True
            status = event.status_code
            values = [v for k, v in event.headers if k == b"server"]
            server_header = _text(b", ".join(values)) if values else None
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > max_bytes:
                return status, server_header, None  # larger than any server's facts: not read further
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return status, server_header, bytes(body)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def server_facts(port: int, info_urls: list[str], redact: Any) -> dict[str, Any]:
    """server.json's facts of the server launched on 127.0.0.1:port: {name: the JSON (or text)
    each route answered}; info URLs by their path, on their own port if they name one."""
    urls = {name: f"http://127.0.0.1:{port}{path}" for name, path in KNOWN.items()}
    for url in info_urls:
        parts = urlsplit(url)
        path = url if url.startswith("/") else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        urls[f"info {url}"] = f"http://127.0.0.1:{parts.port or port}{path}"  # a metrics port, on 127.0.0.1
    _, bodies = asyncio.run(
        ask_routes(
            urls,
            timeout_s=SERVED_TIMEOUT_S,
            deadline_s=SERVED_TIMEOUT_S * len(urls),
            max_bytes=MAX_SERVED_BYTES,
        )
    )
    out: dict[str, Any] = {}
    for name, body in bodies.items():
        text = redact(body.decode("utf-8", "replace"))
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text[:4000]
    return out
