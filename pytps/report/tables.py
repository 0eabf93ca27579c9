"""The summary table as Markdown or CSV (`pytps report DIR --markdown / --csv`): the console's
rows, for pasting into an issue or a spreadsheet. Each row names its unit; values are in it."""

from __future__ import annotations

import csv
import io
from typing import Any

from pytps.report.console import table_rows
from pytps.report.numbers import fmt

COLUMNS = ("metric", "unit", "mean", "stddev", "p50", "p90", "p99", "min", "max", "n")
STATS = ("mean", "stddev", "p50", "p90", "p99", "min", "max")


def markdown(results: dict[str, Any]) -> str:
    """A GitHub-flavoured Markdown table, numbers as the console prints them."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "| --- | --- |" + " ---: |" * (len(COLUMNS) - 2)]
    for m, d in table_rows(results.get("summary") or {}):
        cells = [m.heading, m.unit]
        cells += [fmt(m.shown(d.get(k)), m.unit) for k in STATS]
        cells.append(str(d["count"]))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def csv_text(results: dict[str, Any]) -> str:
    """CSV with 10 significant digits (a spreadsheet rounds for itself; more would print float noise),
    empty where there is no value."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for m, d in table_rows(results.get("summary") or {}):
        values = ["" if d.get(k) is None else f"{d[k] * m.scale:.10g}" for k in STATS]
        writer.writerow([m.heading, m.unit, *values, d["count"]])
    return out.getvalue()
