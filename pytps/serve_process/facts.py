"""What a server says about itself, asked in one place for both records of it:

- `server.json`'s `facts` for a launched server (`--serve`, docs/tuning.md): llama-server's /props,
  vLLM's /version, Ollama's /api/version, a user's `--serve-info URL` (server_facts);
- results.json's `metadata.server` after a run (pytps.runner.provenance.server_facts: /version and
  /props, and the `server` header).

Both ask through ask_routes: each route once, every body capped, the whole asking within one
deadline (httpx's timeout is per read, so a server trickling a byte a second would otherwise hold
the caller for ever), and a server that does not answer at all is not asked again. A route the
server lacks is simply absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

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
    import httpx

    silent: set[str] = set()  # the servers that did not answer
    try:
        async with httpx.AsyncClient(verify=verify, timeout=timeout_s, trust_env=False) as client:
            for name, url in urls.items():
                server = urlsplit(url).netloc
                if server in silent:
                    continue
                try:
                    async with client.stream("GET", url) as resp:
                        if not header and resp.headers.get("server"):
                            header.append(resp.headers["server"])
                        body = bytearray()
                        async for chunk in resp.aiter_bytes():
                            body += chunk
                            if len(body) > max_bytes:
                                break  # larger than any server's facts: not read further
                        status = resp.status_code
                except (httpx.TimeoutException, httpx.TransportError):
                    silent.add(server)  # the caller waits no longer on it
                    continue
                except httpx.HTTPError:
                    continue
                if status == 200 and len(body) <= max_bytes:
                    bodies[name] = bytes(body)
    except (OSError, httpx.HTTPError):
        pass


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
