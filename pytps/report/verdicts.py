"""The verdicts the reports show and the one colour each gets, on the console's words, the HTML
pages' classes and the plots' marks alike: a regression in the trend page, a significant change
for the worse in the compare page and a failed probe in the sweep page are the same red.

`change_class` decides a change's class (history check's Finding.status and the compare page both
call it); the pages take their CSS and their glyphs' colours from COLORS."""

from __future__ import annotations

from typing import Literal

Verdict = Literal["regression", "improvement", "ok", "note"]

#: One colour per verdict class (the sweep's probe verdicts map onto them: PROBE_CLASSES).
COLORS: dict[str, str] = {
    "regression": "#d62728",
    "improvement": "#2ca02c",
    "note": "#ff7f0e",
    "ok": "#1f77b4",
}
#: A capacity-search probe's status as a verdict class.
PROBE_CLASSES: dict[str, str] = {"fail": "regression", "pass": "improvement", "undecided": "note"}
#: A sweep cell's status as a verdict class (a done cell has none).
CELL_CLASSES: dict[str, str] = {"failed": "regression", "skipped": "note"}


def change_class(rel: float | None, significant: bool, better: str | None, limit: float = 0.0) -> Verdict:
    """A relative change's class: `regression` when it is significant and worse than `limit`
    (a fraction) in the direction that is not `better` ("lower"/"higher"), `improvement` when
    significant and better by more than `limit`, `ok` otherwise (and for a figure with no better
    direction)."""
    if rel is None or not significant or better not in ("lower", "higher"):
        return "ok"
    worse = rel if better == "lower" else -rel
    if worse > limit:
        return "regression"
    if -worse > limit:
        return "improvement"
    return "ok"


def css() -> str:
    """The verdict classes' CSS: a coloured left edge and text in tables, the same colour as the marks."""
    rules = []
    for name, color in COLORS.items():
        if name == "ok":
            continue
        rules.append(f"td.{name}, span.{name} {{ color: {color}; font-weight: bold; }}")
        rules.append(f"tr.{name} > td:first-child {{ border-left: 4px solid {color}; }}")
    return "\n".join(rules) + "\n"
