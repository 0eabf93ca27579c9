"""What a server says about itself, kept beside each cell (server.json): llama-server's /props,
vLLM's /version, Ollama's /api/version, a user's `--serve-info URL`. Each is asked once, with a
short timeout; a route the server lacks is simply absent."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from pytps.serve_process.ready import get

KNOWN = {"llama_server_props": "/props", "vllm_version": "/version", "ollama_version": "/api/version"}


def server_facts(port: int, info_urls: list[str], redact: Any) -> dict[str, Any]:
    """{name: the JSON (or text) each route answered}; info URLs by their path."""
    out: dict[str, Any] = {}
    asks = {name: (port, path) for name, path in KNOWN.items()}
    for url in info_urls:
        parts = urlsplit(url)
        path = url if url.startswith("/") else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        asks[f"info {url}"] = (parts.port or port, path)  # a URL's own port (a metrics port), on 127.0.0.1
    for name, (on_port, path) in asks.items():
        status, body, _ = get(on_port, path, timeout_s=5.0)
        if status != 200:
            continue
        text = redact(body.decode("utf-8", "replace"))
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text[:4000]
    return out
