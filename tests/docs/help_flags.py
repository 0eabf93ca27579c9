"""The flags of every `pytps --help`, and the flags the docs give to pytps."""

from __future__ import annotations

import functools
import re
import subprocess
import sys

from doc_runner import DOCS, commands

COMMANDS = [
    "run",
    "sweep",
    "rank",
    "agents",
    "report",
    "compare",
    "serve",
    "clock",
    "calibrate",
    "history",
    "history add",
    "history check",
    "import",
]
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


# A call of pytps in any line: at the line's start, after a shell separator, a path (/usr/local/bin/),
# `python -m`, `ExecStart=` or a quote (a TOML string).
PYTPS_CALL = re.compile(r"""(?:^|[\s;&|(/="'])pytps((?:[ \t]+[^\s;&|#>"']+)*)""")


def pytps_calls(text: str) -> list[tuple[str, str, int]]:
    """(language, the call's words after `pytps`, line) of every pytps command line in every fenced
    block of a Markdown text, whatever the block's language (sh, toml, crontab, ini for systemd)."""
    out: list[tuple[str, str, int]] = []
    for m in FENCE.finditer(text):
        lang, body = m.group(1), m.group(2)
        if lang == "python":
            continue  # Python's pytps is the library; its argv lists are checked by running them
        first_line = text.count("\n", 0, m.start(2)) + 1
        joined = body.replace("\\\n", " ")
        for i, line in enumerate(joined.splitlines()):
            if line.lstrip().startswith("#"):
                continue
            for call in PYTPS_CALL.finditer(line):
                out.append((lang, call.group(1).strip(), first_line + i))
    return out


def command_of(words: str) -> str:
    """The subcommand a call's words start with ("history check" before "history"); "" for none."""
    tokens = words.split()
    for n in (2, 1):
        cmd = " ".join(tokens[:n])
        if cmd in COMMANDS:
            return cmd
    return ""


def unknown_flags(texts: dict[str, str]) -> list[str]:
    """`doc:line: pytps CMD --flag` for each flag a doc's code line gives a pytps command whose
    --help (or pytps's own) does not have it."""
    flags = help_flags()
    bad = []
    for name, text in texts.items():
        for lang, words, line in pytps_calls(text):
            cmd = command_of(words)
            known = flags.get(cmd, set()) | flags[""] | {"--help"}
            for flag in FLAG.findall(words):
                if flag not in known:
                    bad.append(f"{name}:{line}: ({lang}) pytps {cmd} {flag}".replace("pytps  ", "pytps "))
    return bad
