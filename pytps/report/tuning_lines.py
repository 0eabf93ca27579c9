"""The console's table of a tuning's ranking (tuning.json's `ranking`: pytps.sweep.tuning)."""

from __future__ import annotations

from typing import Any


def ranking_lines(index: dict[str, Any], unit: str) -> list[str]:
    """The console's table of the ranking (Markdown-like, aligned)."""
    rows = [("rank", "configuration", f"capacity ({unit}) low–high", "note")]
    reasons = {e["name"]: e.get("reason", "") for e in index.get("configurations", [])}
    for r in index.get("ranking", []):
        if r["rank"] is None:
            rows.append(("—", r["name"], "—", f"{r.get('status')}: {reasons.get(r['name'], '')}"[:120]))
            continue
        high = "∞" if r["high"] is None else f"{r['high']:.4g}"
        note = f"overlaps {', '.join(r['overlaps'])}: order not measured" if r["overlaps"] else ""
        rows.append((str(r["rank"]), r["name"], f"{r['low']:.4g}–{high}", note))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
