"""Issue 29 (5): the README's incremental build works in a fresh venv: `--no-build-isolation`
uses what is installed, so every build requirement of pyproject.toml is installed before it."""

from __future__ import annotations

import re

import doc_runner


def test_the_incremental_build_installs_its_build_requirements_first() -> None:
    requires = doc_runner.pyproject()["build-system"]["requires"]
    names = {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() for r in requires}
    readme = (doc_runner.ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    build = next(b for b in blocks if "--no-build-isolation" in b)
    installed: set[str] = set()
    for cmd in doc_runner.commands(build):
        if "--no-build-isolation" in cmd:
            break
        installed |= {w.lower() for w in cmd.split()[2:] if not w.startswith("-")}
    assert names <= installed, f"install {sorted(names - installed)} before the --no-build-isolation build"
