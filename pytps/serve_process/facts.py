"""What a server says about itself, asked in one place for both records of it:

- `server.json`'s `facts` for a launched server (`--serve`, docs/tuning.md): llama-server's /props,
  vLLM's /version, Ollama's /api/version, a user's `--serve-info URL` (server_facts);
- results.json's `metadata.server` after a run (pytps.runner.provenance.server_facts: /version and
  /props, and the `server` header).

Both ask through ask_routes: each route once, every body capped, the whole asking within one
deadline (the timeout is per read, so a server trickling a byte a second would otherwise hold
the caller for ever), and a server that does not answer at all is not asked again. A route the
server lacks is simply absent.

The GETs are the standard library's http.client on a daemon thread (as pytps.runner.endpoint
lists the models), not httpx: a run asks these after every benchmark, and httpx's import
(httpcore, anyio, trio when installed, an SSL context even for http://) was the largest part of
a short run's fixed cost (issue 42).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    import http.client
    import ssl

T = TypeVar("T")

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
    asking = _Asking(verify, timeout_s, max_bytes, time.monotonic() + deadline_s)
    try:
        with contextlib.suppress(asyncio.TimeoutError, OSError):
            await asyncio.wait_for(in_daemon_thread(asking.ask, urls), deadline_s)
    finally:
        asking.stop()  # at the deadline (or a Ctrl-C): a read still waiting is ended
    return (asking.header[0] if asking.header else None), dict(asking.bodies)


async def in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on a daemon thread of its own. Not asyncio.to_thread: the default executor's
    threads are joined when the event loop closes, so a Ctrl-C while a server is slow to answer
    would wait out the whole timeout; a daemon thread is simply left behind."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting coroutine
            error = exc
        # The loop may be gone (the run was interrupted meanwhile): then nobody wants the answer.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, result, error)

    threading.Thread(target=work, name="pytps-ask", daemon=True).start()
    return await future


def _settle(future: asyncio.Future[T], result: T | None, exc: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)  # type: ignore[arg-type]


class _Asking:
    """The GETs of one ask_routes, in order, on its thread: the standard library's http.client,
    one kept-alive connection per server (host and port)."""

    def __init__(self, verify: bool | str, timeout_s: float, max_bytes: int, deadline: float) -> None:
        self.verify, self.timeout_s, self.max_bytes, self.deadline = verify, timeout_s, max_bytes, deadline
        self.bodies: dict[str, bytes] = {}
        self.header: list[str] = []
        self._open: dict[str, http.client.HTTPConnection] = {}
        self._stopped = False

    def stop(self) -> None:
        """Ends the asking from the event loop's thread: no route is asked after this, and a read
        blocked on a connection returns at once (shutdown wakes it; close alone would not)."""
        self._stopped = True
        for conn in list(self._open.values()):
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)

    def ask(self, urls: Mapping[str, str]) -> None:
        import http.client

        silent: set[str] = set()  # the servers that did not answer
        try:
            for name, url in urls.items():
                parts = urlsplit(url)
                if self._stopped or time.monotonic() >= self.deadline:
                    return
                if parts.netloc in silent or parts.scheme not in ("http", "https"):
                    continue
                try:
                    status, server_header, body = self._get(parts)
                except (OSError, ValueError, http.client.HTTPException):
                    silent.add(parts.netloc)  # the caller waits no longer on it
                    continue
                if not self.header and server_header:
                    self.header.append(server_header)
                if status == 200 and body is not None:
                    self.bodies[name] = body
        finally:
            for conn in list(self._open.values()):
                conn.close()

    def _get(self, parts: SplitResult) -> tuple[int, str | None, bytes | None]:
        """(status, the `server` header, the body, or None when larger than max_bytes) of a GET,
        on the server's kept-alive connection when it has one. A kept-alive connection that the
        server closed while it sat idle is replaced once by a new one."""
        import http.client

        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # No credentials, and no compression: the body is read as sent, up to max_bytes.
        headers = {"Accept": "*/*", "Accept-Encoding": "identity", "User-Agent": "pytps"}
        for _ in range(2):
            conn = self._open.pop(parts.netloc, None)
            reused = conn is not None
            if conn is None:
                conn = self._connection(parts)
            self._open[parts.netloc] = conn  # for stop() to reach
            try:
                conn.request("GET", target, headers=headers)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                del self._open[parts.netloc]
                if reused:
                    continue  # closed while it sat idle: asked again on a new connection
                raise
            except BaseException:
                conn.close()
                del self._open[parts.netloc]
                raise
            try:
                body = resp.read(self.max_bytes + 1)
            except BaseException:
                conn.close()
                del self._open[parts.netloc]
                raise
            server_header = _header(resp.msg.get_all("server"))
            if len(body) > self.max_bytes or not resp.isclosed():
                conn.close()  # not read to its end: not reused
                del self._open[parts.netloc]
            return resp.status, server_header, (None if len(body) > self.max_bytes else body)
        raise AssertionError("unreachable: a new connection is never retried")

    def _connection(self, parts: SplitResult) -> http.client.HTTPConnection:
        import http.client

        host, port = parts.hostname or "", parts.port
        if parts.scheme == "https":  # the CA store is loaded only for https
            return http.client.HTTPSConnection(host, port, timeout=self.timeout_s, context=ssl_context(self.verify))
        return http.client.HTTPConnection(host, port, timeout=self.timeout_s)


def _header(values: list[str] | None) -> str | None:
    """A header's value as HTTP reads it (RFC 9110: without the whitespace around it; several
    joined by ", "), in UTF-8 where it is (http.client reads every byte as latin-1)."""
    if not values:
        return None
    value = ", ".join(v.strip(" \t") for v in values)
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def ssl_context(verify: bool | str) -> ssl.SSLContext:
    """The run's trust for its standard-library requests (these, and the model listing): the
    system's CAs, or the bundle given (a PEM file, or a directory of hashed certificates), or
    none at all (--insecure)."""
    import os
    import ssl

    if verify is False:
        return ssl._create_unverified_context()  # --insecure asks for exactly this
    if isinstance(verify, str) and os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)


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
