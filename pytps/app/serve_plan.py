"""The launched server's settings (the table's `serve` ones: --serve and its companions,
docs/tuning.md), checked before any server starts: `ServeOptions`, and the secrets its log and
command line are masked of."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytps.errors import ConfigError
from pytps.measure.redact import Redactor, is_secret_name, secrets_of

if TYPE_CHECKING:  # loaded when a server is launched or a hook given, not by every run
    from pytps.serve_process.grid import Configuration
    from pytps.serve_process.hooks import Hook
    from pytps.serve_process.ready import Readiness


def _say(line: str) -> None:
    print(f"pytps: {line}", file=sys.stderr, flush=True)


@dataclass
class ServeOptions:
    """What launching the server takes: the command template and its configurations, when it is
    ready, how long to wait and to grant it after SIGTERM, warm starts, facts to keep, hooks."""

    template: str
    configs: list[Configuration]
    readiness: Readiness
    timeout_s: float
    grace_s: float
    starts: int
    info: list[str]
    before: Hook | None
    after: Hook | None
    model: str | None
    redact: Redactor
    resume: bool = False
    say: Callable[[str], None] = field(default=_say)


def serve_options(
    serve: Mapping[str, Any], settings: Mapping[str, Any], *, base_url: str | None = None
) -> ServeOptions | None:
    """The `serve` settings (serve, serve_grid, …) checked against the run's; None without
    `serve` (hooks then act on the endpoint: `plain_hooks`)."""
    template = serve.get("serve")
    if template is None:
        for name in ("serve_grid", "serve_info"):
            if serve.get(name):
                raise ConfigError(f"--{name.replace('_', '-')} needs --serve CMD: the server command to launch")
        if serve.get("resume"):
            raise ConfigError("--resume keeps the finished configurations of a --serve tuning: give --serve")
        return None
    if base_url is not None:
        raise ConfigError("--serve launches the server itself: leave out --base-url")
    starts, timeout, grace = (
        serve.get("serve_starts", 0),
        serve.get("serve_timeout", 300.0),
        serve.get("serve_grace", 10.0),
    )
    if starts < 0 or timeout <= 0 or grace < 0:
        raise ConfigError("--serve-starts must be >= 0, --serve-timeout > 0 and --serve-grace >= 0")
    if serve.get("resume") and not settings.get("out"):
        raise ConfigError("--resume needs --out DIR: the folder of the tuning to finish")
    from pytps.serve_process.grid import configurations, parse_grid
    from pytps.serve_process.ready import parse_readiness

    before, after = _hooks(serve)
    return ServeOptions(
        template=template,
        configs=configurations(template, parse_grid(list(serve.get("serve_grid") or []))),
        readiness=parse_readiness(serve.get("serve_ready")),
        timeout_s=float(timeout),
        grace_s=float(grace),
        starts=int(starts),
        info=list(serve.get("serve_info") or []),
        before=before,
        after=after,
        model=settings.get("model"),
        redact=server_redactor(settings, template),
        resume=bool(serve.get("resume")),
    )


_SECRET_OPTION = re.compile(r"^--?([A-Za-z0-9_-]+)(?:=(.+))?$")


def server_redactor(settings: Mapping[str, Any], template: str | None) -> Redactor:
    """Secrets masked in the server's log and command line: the run's (API key, secret headers),
    the values of secret-named environment variables, and of secret-named options of the command
    (`--api-key K`, `--hf-token=T`)."""
    key_env = settings.get("api_key_env") or (
        "ANTHROPIC_API_KEY" if settings.get("api") == "anthropic" else "OPENAI_API_KEY"
    )
    secrets = secrets_of(os.environ.get(key_env), dict(settings.get("headers") or {}))
    secrets += [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= 8]
    words = (template or "").split()
    for i, word in enumerate(words):
        m = _SECRET_OPTION.match(word)
        if m and is_secret_name(m.group(1)):
            value = m.group(2) or (words[i + 1] if i + 1 < len(words) else None)
            if value:
                secrets.append(value.strip("'\""))
    return Redactor(secrets)


def plain_hooks(serve: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple[Hook | None, Hook | None, Redactor]:
    """--before-cell / --after-cell without --serve (on --base-url, or the built-in emulator)."""
    before, after = _hooks(serve)
    return before, after, server_redactor(settings, None)


def _hooks(serve: Mapping[str, Any]) -> tuple[Hook | None, Hook | None]:
    """--before-cell and --after-cell, each None when not given (then their module is not loaded)."""
    if serve.get("before_cell") is None and serve.get("after_cell") is None:
        return None, None
    from pytps.serve_process.hooks import parse_hook

    return parse_hook(serve.get("before_cell"), "--before-cell"), parse_hook(serve.get("after_cell"), "--after-cell")
