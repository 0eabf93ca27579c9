"""How tests/docs runs a doc's blocks (docs/docs-tests.md says the same for readers).

Sybil collects the fenced blocks of README.md and docs/*.md; this module is what it evaluates
them with:

- ```sh blocks: one bash script per block, `set -e`, in the document's temporary folder
  (outside the checkout), with the doc's endpoint (any `http://HOST:8000`) mapped to the
  `pytps serve` the test started. A block that starts its own `pytps serve --port 8000` gets a
  free port of its own instead, and the block's other commands are pointed at it. A
  foreground `pytps serve` is started, waited for until it listens, and stopped; one with `&`
  lives until the block ends. The figures that only make a command long (`--duration`,
  `--requests`, `--warmup`, `--sessions`, `--workers`, `--repeat`) are capped so the suite stays
  within CI's budget; every flag the doc gives is still passed. `python bench/...` and
  `python tools/...` run the checkout's script, as a reader runs them from a clone. `pip install` lines are checked (the
  form works from a clone, the extras exist in pyproject.toml) but not run: the package under
  test is already installed. A saved run that a `pytps report` / `pytps compare` line names
  and that does not exist yet (`results/<run>/`, `results/before/`, `A/`) is made first by a
  small `pytps run --out` into that folder; `<run>` is the newest run in `results/`.
- ```python blocks: executed in the document's namespace (shared by its blocks, so one
  block's names are the next one's), with the same host mapping; top-level `await` runs on
  a fresh event loop.
- ```text blocks right after an ```sh block are its output: the first line of the shown
  output (a table's column names, a title) must appear in what the command printed.

A block is skipped by `<!-- skip: next "reason" -->` before it; docs/docs-tests.md lists when.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shlex
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# The doc's endpoint: any host on port 8000 (127.0.0.1, 10.0.0.5, inference.internal).
DOC_URL = re.compile(r"http://[A-Za-z0-9.\-]+:8000")
# Caps on the figures that only make a command long (flag: highest value run).
CAPS = {"--duration": 2, "--requests": 24, "--warmup": 2, "--sessions": 4, "--workers": 2, "--repeat": 1}
# A clone's scripts, run by a reader from the checkout: the docs tests run them from theirs.
CHECKOUT_SCRIPT = re.compile(r"^python3?\s+((?:bench|tools)/\S+\.py)\b")
BLOCK_TIMEOUT_S = 240
DEFAULT_SERVE_ARGS = ["--ttft-ms", "2", "--itl-us", "100"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"pytps serve exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {timeout_s} s")


def pyproject() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


# --- sh blocks -----------------------------------------------------------------------------


def commands(source: str) -> list[str]:
    """The block's commands, continuation lines joined; blank and comment-only lines dropped."""
    out: list[str] = []
    pending = ""
    for line in source.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.strip().startswith("#"):
            out.append(line.strip())
    if pending.strip():
        out.append(pending.strip())
    return out


def cap_figures(cmd: str) -> str:
    for flag, cap in CAPS.items():
        cmd = re.sub(
            rf"{flag}(\s+|=)(\d+)\b",
            lambda m, flag=flag, cap=cap: f"{flag}{m.group(1)}{min(int(m.group(2)), cap)}",
            cmd,
        )
    return cmd


def check_pip_install(cmd: str) -> None:
    """A doc's `pip install` must work from a clone: a local path (`.`, `".[x]"`), extras that exist."""
    extras = set(pyproject()["project"]["optional-dependencies"])
    for part in re.split(r"&&|;", cmd):
        words = shlex.split(part)
        if words[:2] != ["pip", "install"]:
            continue
        for word in words[2:]:
            if word.startswith("-"):
                continue
            m = re.fullmatch(r"(?P<name>[^\[]+)(\[(?P<extras>[^\]]*)\])?", word)
            assert m, f"pip install argument {word!r} not understood"
            if m["extras"] is not None or m["name"] in ("pytps",):
                assert m["name"] in (".", "./"), (
                    f'`{part.strip()}`: {word!r} names a package no index has; from a clone write ".[extra]"'
                )
                for extra in (m["extras"] or "").split(","):
                    assert extra in extras, f"`{part.strip()}`: no extra {extra!r} in pyproject.toml"


SAVED_RUN_ARGS = re.compile(r"^pytps\s+(report|compare)\s+(.*)$")


def needed_runs(cmd: str) -> list[str]:
    """The saved-run folders a report/compare line names (before its options)."""
    m = SAVED_RUN_ARGS.match(cmd)
    if not m:
        return []
    folders: list[str] = []
    for word in shlex.split(m.group(2), comments=True):
        if word.startswith("-"):
            break
        folders.extend(x for x in word.split(",") if x)
    return folders


class ShellBlock:
    """Runs one ```sh block as the doc's reader would, against the test's emulator."""

    def __init__(self, cwd: Path, port: int, env: dict[str, str]) -> None:
        self.cwd, self.port, self.env = cwd, port, env

    def newest_run(self) -> str | None:
        runs = sorted(
            (p for p in (self.cwd / "results").glob("*") if (p / "results.json").is_file()),
            key=lambda p: p.stat().st_mtime,
        )
        return str(runs[-1].relative_to(self.cwd)) + "/" if runs else None

    def make_run(self, folder: str) -> None:
        subprocess.run(
            ["pytps", "run", "--base-url", f"http://127.0.0.1:{self.port}", "--requests", "6",
             "--concurrency", "2", "--output-tokens", "16", "--out", folder],
            cwd=self.cwd, env=self.env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def prepare(self, cmd: str) -> str:
        """The command as run: endpoint mapped, figures capped, missing saved runs made."""
        if "<run>" in cmd:
            run = self.newest_run()
            if run is None:
                self.make_run("results/doc-run")
                run = "results/doc-run/"
            cmd = cmd.replace("results/<run>/", run)
        for folder in needed_runs(cmd):
            if not (self.cwd / folder).exists():
                self.make_run(folder)
        cmd = CHECKOUT_SCRIPT.sub(lambda m: f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / m.group(1)))}", cmd)
        return cap_figures(cmd)

    def run(self, source: str) -> str:
        cmds = commands(source)
        port = self.port
        serve_port = None
        if any(re.match(r"^pytps\s+serve\b", c) for c in cmds):
            serve_port = free_port()  # the block starts its own server: its 8000 is that one
            port = serve_port
        script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
        parts = [p.strip() for c in cmds for p in c.split(" && ")]  # under `set -e`, `a && b` is `a; b`
        for cmd in parts:
            cmd = DOC_URL.sub(f"http://127.0.0.1:{port}", cmd)
            if cmd.startswith("pip install"):
                check_pip_install(cmd)
                continue
            if re.match(r"^pytps\s+serve\b", cmd):
                script.extend(self.serve_lines(cmd, serve_port or port))
                continue
            script.append(self.prepare(cmd))
        proc = subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=self.cwd, env=self.env, capture_output=True, text=True,
            timeout=BLOCK_TIMEOUT_S,
        )  # fmt: skip
        if proc.returncode != 0:
            raise AssertionError(
                f"exit {proc.returncode} running:\n" + "\n".join(script[2:]) + f"\n--- stdout\n{proc.stdout[-3000:]}"
                f"\n--- stderr\n{proc.stderr[-3000:]}"
            )
        return proc.stdout + proc.stderr

    def serve_lines(self, cmd: str, port: int) -> list[str]:
        cmd = re.sub(r"\s+#.*$", "", cmd)  # a trailing comment, so that flags can follow
        background = cmd.endswith("&")
        cmd = cmd.rstrip("&").strip()
        if re.search(r"--port(\s+|=)\d+", cmd):
            cmd = re.sub(r"--port(\s+|=)\d+", f"--port {port}", cmd)
        else:
            cmd += f" --port {port}"  # its default port is 8000: mapped like the rest
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import doc_runner; doc_runner.wait_port({port})"
        wait = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
        if background:
            return [f"{cmd} &", wait]
        # A foreground server runs until stopped: start it, see it listen, stop it.
        return [f"{cmd} & serve_pid=$!", wait, "kill $serve_pid; wait $serve_pid || true"]


#: The mark before a shown output whose figures are the doc's run's, not the reader's.
FIGURES_VARY = "<!-- output: figures vary -->"
# A figure: a 12-hex-digit fingerprint, or a number (signed, with thousands separators and decimals).
FIGURE = re.compile(r"\b[0-9a-f]{12}\b|[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def without_figures(text: str) -> str:
    return FIGURE.sub("#", re.sub(r"\s+", " ", text))


def check_output(shown: str, printed: str, figures_vary: bool = False) -> None:
    """The first line of a shown output (column names, a title) appears in what was printed; with
    figures_vary, every figure of both taken as any figure (the words and their order checked)."""
    first = next((line for line in shown.splitlines() if line.strip()), "")
    cells = [c.strip() for c in re.split(r"[|┃│]", first) if c.strip()]
    norm = without_figures if figures_vary else (lambda t: re.sub(r"\s+", " ", t))
    flat = norm(printed)
    for cell in cells:
        assert norm(cell) in flat, f"the doc shows {cell!r} in the output; the command printed:\n{printed[-3000:]}"


# --- python blocks -------------------------------------------------------------------------


def run_python(example: Example) -> None:
    ns = example.namespace
    source = DOC_URL.sub(f"http://127.0.0.1:{ns['_port']}", str(example.parsed))
    padded = "\n" * example.line + source  # tracebacks point at the doc's line
    code = compile(padded, str(example.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    if code.co_flags & 0x80:  # CO_COROUTINE: the block awaits at top level
        asyncio.run(eval(code, ns))
    else:
        exec(code, ns)


# --- wiring --------------------------------------------------------------------------------


def evaluate_sh(example: Example) -> None:
    ns = example.namespace
    block = ShellBlock(ns["_cwd"], ns["_port"], ns["_env"])
    ns["_last_output"] = block.run(str(example.parsed))


def evaluate_text(example: Example) -> None:
    printed = example.namespace.pop("_last_output", None)
    if printed is not None:
        before = example.document.text[: example.start].rstrip()
        check_output(str(example.parsed), printed, figures_vary=before.endswith(FIGURES_VARY))


def evaluate_python(example: Example) -> None:
    example.namespace.pop("_last_output", None)
    run_python(example)


SYBIL = Sybil(
    parsers=[
        CodeBlockParser("sh", evaluate_sh),
        CodeBlockParser("python", evaluate_python),
        CodeBlockParser("text", evaluate_text),
        SkipParser(),
    ],
    path=str(ROOT),
)


def parse(path: Path) -> Any:
    """The Sybil document of a Markdown file: its examples in order, and its namespace."""
    return SYBIL.parse(path)


def setup_namespace(document_namespace: dict[str, Any], cwd: Path, port: int, env: dict[str, str]) -> None:
    document_namespace.update(_cwd=cwd, _port=port, _env=env, __name__="__docs__")


def environment(port: int, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTPS_ENVELOPE_DIR"] = str(home / "envelope")
    env["PYTPS_DOCS_PORT"] = str(port)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env
