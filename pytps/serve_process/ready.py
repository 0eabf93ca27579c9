"""When a launched server counts as ready (`--serve-ready`), and the probes that tell.

- `auto` (the default): GET /health answers 200; a server without that route (404) is asked
  GET /v1/models instead. (vLLM, SGLang and llama-server answer /health 200 only once the model
  is loaded: llama-server says 503 while loading; Ollama has no /health but /v1/models.)
- a path (`/ping`) or a URL on 127.0.0.1: GET answers 200.
- `log:REGEX`: a line of the server's own output matches.
- `request`: a first generation request (`/v1/chat/completions`, one token) answers 200.

HTTP probes start once the port is listening (read from /proc/net/tcp, without connecting), so
the first connection the server accepts is the probe that finds it ready.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pytps.errors import ConfigError

PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Readiness:
    """One of: kind 'auto', 'url' (target: a path), 'log' (pattern), 'request'."""

    kind: str
    target: str = ""
    pattern: re.Pattern[str] | None = None

    def describe(self) -> str:
        return {
            "auto": "auto (/health, then /v1/models)",
            "url": f"GET {self.target}",
            "request": "a first request",
        }.get(self.kind, f"log line /{self.target}/")


def parse_readiness(text: str | None) -> Readiness:
    """`--serve-ready` as given (None: auto); a bad one is a ConfigError naming what to write."""
    if text is None or text == "auto":
        return Readiness("auto")
    if text == "request":
        return Readiness("request")
    if text.startswith("log:"):
        try:
            return Readiness("log", text[4:], re.compile(text[4:]))
        except re.error as exc:
            raise ConfigError(f"--serve-ready {text!r}: the pattern does not compile ({exc})") from exc
    if text.startswith("/"):
        return Readiness("url", text)
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost"):
            raise ConfigError(f"--serve-ready {text!r}: a readiness URL is the served process's own, http://127.0.0.1")
        return Readiness("url", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    raise ConfigError(
        f"--serve-ready {text!r} is not one of: auto, a path (/health), a URL on 127.0.0.1, log:REGEX, request"
    )


def port_listening(port: int) -> bool:
    """Whether some socket listens on this TCP port, from /proc/net/tcp and tcp6 (no connection
    made, so the server's first accepted connection stays the readiness probe's)."""
    want = f":{port:04X}"
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[1].endswith(want) and fields[3] == "0A":  # 0A: LISTEN
                return True
    return False


def get(port: int, path: str, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[int, bytes, int]:
    """GET 127.0.0.1:port/path: (status, body, when the response's head arrived, ns); (0, b"", 0)
    when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        head_ns = time.monotonic_ns()
        return resp.status, resp.read(), head_ns
    except (OSError, http.client.HTTPException):
        return 0, b"", 0
    finally:
        conn.close()


def probe_http(port: int, readiness: Readiness) -> tuple[int, str]:
    """(when it answered ready, ns; the path that did), or (0, "") when not yet."""
    paths = [readiness.target] if readiness.kind == "url" else ["/health"]
    for path in paths:
        status, _, at = get(port, path)
        if status == 200:
            return at, path
        if readiness.kind == "auto" and status in (404, 405):
            status, _, at = get(port, "/v1/models")
            if status == 200:
                return at, "/v1/models"
    return 0, ""


def model_name(port: int) -> str | None:
    """The first model of /v1/models, if the server lists one."""
    status, body, _ = get(port, "/v1/models")
    if status != 200:
        return None
    try:
        data = json.loads(body)["data"]
        return str(data[0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def first_token(port: int, model: str | None, timeout_s: float = 60.0) -> tuple[int, int, str]:
    """One streamed chat request of up to 4 tokens: (sent ns, first token ns, "" or why none came).
    Its first token is the first SSE chunk with text (content, reasoning or a completion's text)."""
    body = {
        "model": model or "default",
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 4,
        "stream": True,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        sent = time.monotonic_ns()
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return sent, 0, f"HTTP {resp.status}"
        while True:
            line = resp.readline()
            at = time.monotonic_ns()
            if not line:
                return sent, 0, "the stream ended with no token"
            text = line.strip()
            if not text.startswith(b"data:") or text == b"data: [DONE]":
                continue
            if _has_text(text[5:]):
                return sent, at, ""
    except (OSError, http.client.HTTPException) as exc:
        return 0, 0, type(exc).__name__
    finally:
        conn.close()


def _has_text(payload: bytes) -> bool:
    try:
        chunk = json.loads(payload)
        choice = chunk["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    delta = choice.get("delta") or {}
    return any(
        bool(x)
        for x in (delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning"), choice.get("text"))
    )


def request_ready(port: int, model: str | None) -> int:
    """`request` readiness: when a first generation request succeeded (its first token), or 0."""
    _, at, _ = first_token(port, model, timeout_s=PROBE_TIMEOUT_S * 5)
    return at
