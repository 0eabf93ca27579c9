"""The flags of every `pytps --help`, and the flags the docs give to pytps."""

from __future__ import annotations

import functools
import re
import subprocess
import sys

from doc_runner import DOCS, commands

COMMANDS = ["run", "sweep", "agents", "report", "compare", "serve", "clock", "calibrate", "history", "history add", "history check"]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
FENCE = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")


@functools.cache
def help_flags() -> dict[str, set[str]]:
    """{command: its flags}, "" for `pytps` itself."""
    out: dict[str, set[str]] = {}
    for cmd in ["", *COMMANDS]:
        argv = [sys.executable, "-m", "pytps", *cmd.split(), "--help"]
        text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        usage_and_options = text.split("\nexamples", 1)[0]  # an epilog's examples may name other tools
        out[cmd] = set(FLAG.findall(usage_and_options)) - {"--help"}
    return out


def doc_texts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in DOCS}


def doc_flags() -> dict[str, set[str]]:
    """{flag: the docs that give it to pytps}: in a ```sh block's `pytps ...` command, in an inline
    `pytps ...` span, or alone in a code span (`--rate R`, `--html [FILE]`)."""
    found: dict[str, set[str]] = {}
    for name, text in doc_texts().items():
        spans: list[str] = []
        for lang, body in FENCE.findall(text):
            if lang == "sh":
                spans += [c for c in commands(body) if c.startswith("pytps ")]
        prose = FENCE.sub("", text)
        for span in CODE_SPAN.findall(prose):
            if span.startswith(("pytps ", "--")):
                spans.append(span)
        for span in spans:
            for flag in FLAG.findall(span):
                found.setdefault(flag, set()).add(name)
    return found
