"""Ranking server configurations by their capacity bracket (`pytps sweep --serve … --search`):
highest low edge first (the load each is known to serve); where two brackets overlap, the
order between them is not measured, and the ranking says so."""

from __future__ import annotations

import math
from typing import Any


def _edges(entry: dict[str, Any]) -> tuple[float, float] | None:
    cap = entry.get("capacity")
    if entry.get("status") != "done" or not isinstance(cap, dict):
        return None
    low = cap.get("low")
    high = cap.get("high")
    return (float(low) if low is not None else 0.0, float(high) if high is not None else math.inf)


def rank(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{rank, name, low, high, overlaps: [names]}], best first; configurations without a bracket
    (failed, or not a search) after them, unranked."""
    bracketed = [(e["name"], _edges(e)) for e in entries]
    ranked = sorted(((n, b) for n, b in bracketed if b is not None), key=lambda x: (-x[1][0], -x[1][1]))
    out = []
    for i, (name, (low, high)) in enumerate(ranked, 1):
        overlaps = [m for m, (lo, hi) in ranked if m != name and lo <= high and low <= hi]
        out.append(
            {"rank": i, "name": name, "low": low, "high": None if math.isinf(high) else high, "overlaps": overlaps}
        )
    for name, b in bracketed:
        if b is None:
            status = next(e.get("status", "?") for e in entries if e["name"] == name)
            out.append({"rank": None, "name": name, "low": None, "high": None, "overlaps": [], "status": status})
    return out
