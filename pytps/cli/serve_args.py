"""The --serve flags (docs/tuning.md) and the settings they make, checked before any server starts.
[issue 38: settings to port into the table of settings when it lands]"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from pytps.errors import ConfigError
from pytps.measure.redact import Redactor, is_secret_name, secrets_of
from pytps.serve_process.grid import Configuration, configurations, parse_grid
from pytps.serve_process.hooks import Hook, parse_hook
from pytps.serve_process.ready import Readiness, parse_readiness


def add_serve_arguments(p: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    """--serve and its companions (docs/tuning.md). [issue 38: settings to port into the table]"""
    g = p.add_argument_group("launching the server (docs/tuning.md)")
    g.add_argument(
        "--serve",
        metavar="CMD",
        help="start this server command per configuration and benchmark it (no --base-url): a template "
        "with {port} and the {name}s of --serve-grid, e.g. 'llama-server -m m.gguf -np {np} --port {port}'",
    )
    g.add_argument(
        "--serve-grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="a server setting to vary: one configuration per combination (repeatable)",
    )
    g.add_argument(
        "--serve-ready",
        metavar="WHEN",
        help="when the server is ready: auto (default: GET /health, then /v1/models), a path or "
        "http://127.0.0.1 URL answering 200, log:REGEX (a line of its output), or request (a first request)",
    )
    g.add_argument("--serve-timeout", type=float, default=300.0, metavar="S", help="most seconds to wait (default 300)")
    g.add_argument(
        "--serve-grace",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when stopping it (default 10)",
    )
    g.add_argument(
        "--serve-starts",
        type=int,
        default=0,
        metavar="N",
        help="after each configuration's cell, N more (warm) starts timed to their first token (default 0)",
    )
    g.add_argument(
        "--serve-info",
        action="append",
        default=[],
        metavar="URL",
        help="also keep what this path or URL of the server answers, in server.json (repeatable)",
    )
    g.add_argument(
        "--before-cell",
        metavar="CMD|URL|PRESET",
        help="run before each cell: a command, a URL to POST, or reset:vllm, reset:sglang, reset:llama-server",
    )
    g.add_argument("--after-cell", metavar="CMD|URL|PRESET", help="run after each cell (as --before-cell)")
    if sweep:
        g.add_argument(
            "--resume",
            action="store_true",
            help="with --serve and --out: keep the configurations tuning.json says are finished, run the rest",
        )


@dataclass
class ServeOptions:
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
    say: Callable[[str], None] = field(default=lambda line: print(f"pytps: {line}", file=sys.stderr, flush=True))


def serve_options(args: argparse.Namespace) -> ServeOptions | None:
    """The --serve settings, checked; None without --serve (hooks then act on --base-url)."""
    if args.serve is None:
        for flag in ("serve_grid", "serve_info"):
            if getattr(args, flag):
                raise ConfigError(f"--{flag.replace('_', '-')} needs --serve CMD: the server command to launch")
        if getattr(args, "resume", False):
            raise ConfigError("--resume keeps the finished configurations of a --serve tuning: give --serve")
        return None
    if args.base_url is not None:
        raise ConfigError("--serve launches the server itself: leave out --base-url")
    if args.serve_starts < 0 or args.serve_timeout <= 0 or args.serve_grace < 0:
        raise ConfigError("--serve-starts must be >= 0, --serve-timeout > 0 and --serve-grace >= 0")
    if getattr(args, "resume", False) and not args.out:
        raise ConfigError("--resume needs --out DIR: the folder of the tuning to finish")
    return ServeOptions(
        template=args.serve,
        configs=configurations(args.serve, parse_grid(args.serve_grid)),
        readiness=parse_readiness(args.serve_ready),
        timeout_s=args.serve_timeout,
        grace_s=args.serve_grace,
        starts=args.serve_starts,
        info=list(args.serve_info),
        before=parse_hook(args.before_cell, "--before-cell"),
        after=parse_hook(args.after_cell, "--after-cell"),
        model=args.model,
        redact=server_redactor(args),
        resume=bool(getattr(args, "resume", False)),
    )


_SECRET_OPTION = re.compile(r"^--?([A-Za-z0-9_-]+)(?:=(.+))?$")


def server_redactor(args: argparse.Namespace, template: str | None = None) -> Redactor:
    """Secrets masked in the server's log and command line: the run's (API key, secret headers),
    the values of secret-named environment variables, and of secret-named options of the command
    (`--api-key K`, `--hf-token=T`)."""
    key_env = args.api_key_env or ("ANTHROPIC_API_KEY" if args.api == "anthropic" else "OPENAI_API_KEY")
    headers = dict(h.partition(":")[::2] for h in args.header)
    secrets = secrets_of(os.environ.get(key_env), {k.strip(): v.strip() for k, v in headers.items()})
    secrets += [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= 8]
    words = (template or args.serve or "").split()
    for i, word in enumerate(words):
        m = _SECRET_OPTION.match(word)
        if m and is_secret_name(m.group(1)):
            value = m.group(2) or (words[i + 1] if i + 1 < len(words) else None)
            if value:
                secrets.append(value.strip("'\""))
    return Redactor(secrets)


def plain_hooks(args: argparse.Namespace) -> tuple[Hook | None, Hook | None, Redactor]:
    """--before-cell / --after-cell without --serve (on --base-url, or the built-in emulator)."""
    before = parse_hook(args.before_cell, "--before-cell")
    after = parse_hook(args.after_cell, "--after-cell")
    return before, after, server_redactor(args)
