"""Hooks between cells (`--before-cell`, `--after-cell`): a named preset, a URL (POSTed), or a
command (run without a shell, with PYTPS_BASE_URL set). The presets reset a prefix cache, so a
cell starts cold when the user asks it to:

- `reset:vllm`: POST /reset_prefix_cache (vLLM; also pytps's emulator);
- `reset:sglang`: POST /flush_cache (SGLang);
- `reset:llama-server`: POST /slots/{id}?action=erase for every slot of /props' total_slots
  (llama-server started with --slot-save-path; without it llama-server answers 501).
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pytps.errors import ConfigError, EndpointError
from pytps.serve_process.ready import get

PRESETS = ("reset:vllm", "reset:sglang", "reset:llama-server")
HOOK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Hook:
    """kind: 'preset', 'url' or 'command'; spec as given."""

    kind: str
    spec: str

    def describe(self) -> str:
        return self.spec


def parse_hook(text: str | None, flag: str) -> Hook | None:
    if text is None:
        return None
    if text in PRESETS:
        return Hook("preset", text)
    if text.startswith("reset:"):
        raise ConfigError(f"{flag} {text!r}: the presets are {', '.join(PRESETS)}")
    if text.startswith(("http://", "https://")):
        return Hook("url", text)
    try:
        if not shlex.split(text):
            raise ValueError("empty")
    except ValueError as exc:
        raise ConfigError(f"{flag} {text!r} is not a command, a URL or one of {', '.join(PRESETS)}") from exc
    return Hook("command", text)


def run_hook(hook: Hook, base_url: str, redact: Callable[[str], str]) -> str:
    """Runs it; returns one line of what happened. A hook that fails is an EndpointError."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    if hook.kind == "preset":
        name = hook.spec.partition(":")[2]
        if name == "vllm":
            return _post(host, port, "/reset_prefix_cache", hook)
        if name == "sglang":
            return _post(host, port, "/flush_cache", hook)
        status, body, _ = get(port, "/props") if host in ("127.0.0.1", "localhost") else (0, b"", 0)
        try:
            slots = int(json.loads(body)["total_slots"]) if status == 200 else 1
        except (ValueError, KeyError, TypeError):
            slots = 1
        for slot in range(slots):
            _post(host, port, f"/slots/{slot}?action=erase", hook)
        return f"{hook.spec}: {slots} slot(s) erased"
    if hook.kind == "url":
        u = urlsplit(hook.spec)
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        return _post(u.hostname or "127.0.0.1", u.port or 80, path, hook)
    env = {**os.environ, "PYTPS_BASE_URL": base_url}
    try:
        done = subprocess.run(shlex.split(hook.spec), env=env, capture_output=True, timeout=HOOK_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EndpointError(f"hook {redact(hook.spec)!r} failed: {redact(str(exc))}") from exc
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        last = redact(lines[-1]) if lines else "no output"
        raise EndpointError(f"hook {redact(hook.spec)!r} exited with status {done.returncode}: {last}")
    return f"{redact(hook.spec)}: ok"


def _post(host: str, port: int, path: str, hook: Hook) -> str:
    conn = http.client.HTTPConnection(host, port, timeout=HOOK_TIMEOUT_S)
    try:
        conn.request("POST", path, b"", {"Content-Length": "0"})
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise EndpointError(f"hook {hook.spec}: POST {path} failed ({type(exc).__name__}: {exc})") from exc
    finally:
        conn.close()
    if resp.status >= 300:
        hint = " (llama-server erases slots only when started with --slot-save-path)" if "slots" in path else ""
        text = body.decode("utf-8", "replace")[:200]
        raise EndpointError(f"hook {hook.spec}: POST {path} answered {resp.status}{hint}: {text}")
    return f"{hook.spec}: POST {path} {resp.status}"
