"""The list of skipped doc blocks in docs/docs-tests.md, generated from the docs' own
`<!-- skip: next "reason" -->` marks, and checked by tests/docs/test_harness.py so it cannot go
stale. `python tests/docs/skip_list.py --write` rewrites the list between its two markers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST_DOC = ROOT / "docs" / "docs-tests.md"
BEGIN = "<!-- list of skipped blocks: begin (generated: python tests/docs/skip_list.py --write) -->"
END = "<!-- list of skipped blocks: end -->"
SKIP = re.compile(r'<!--\s*skip:\s*next\s+"([^"]*)"\s*-->')


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def skips() -> list[tuple[str, str]]:
    """(doc, reason) of every skip mark, in the docs' order (docs-tests.md's own example left out)."""
    out = []
    for path in docs():
        if path == LIST_DOC:
            continue
        for m in SKIP.finditer(path.read_text(encoding="utf-8")):
            out.append((str(path.relative_to(ROOT)), m.group(1)))
    return out


def render(found: list[tuple[str, str]]) -> str:
    return "\n".join(f"- `{doc}`: {reason}" for doc, reason in found)


def current(text: str) -> str:
    """The list as docs-tests.md has it now."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip()


def write() -> None:
    text = LIST_DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    LIST_DOC.write_text(text[:start] + "\n" + render(skips()) + "\n" + text[end:], encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    print(render(skips()))
