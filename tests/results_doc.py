"""docs/results.md's key tables as sets, and a results file flattened to dotted keys: what the schema
tests (tests/results, tests/scale) compare."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|", re.M)


def documented() -> tuple[dict[str, set[str]], set[str]]:
    """Keys per section of docs/results.md, and the keys documented as maps (data keys inside)."""
    text = DOC.read_text()
    sections: dict[str, set[str]] = {}
    maps: set[str] = set()
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.split("\n", 1)[0].strip()
        rows = ROW.findall(part)
        sections[title] = {key for key, _ in rows if key != "key"}
        maps |= {key for key, kind in rows if kind.strip().startswith("map")}
    return sections, maps


def is_stats(value: Any) -> bool:
    return isinstance(value, dict) and {"count", "p50", "p99", "mean"} <= value.keys()


def flatten(value: Any, prefix: str, maps: set[str], out: set[str]) -> set[str]:
    if prefix and not prefix.endswith("[]"):
        out.add(prefix)
    if prefix in maps:
        return out
    if is_stats(value):
        out.update(f"stats.{k}" for k in value)
    elif isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, maps, out)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                flatten(item, f"{prefix}[]", maps, out)
    return out
