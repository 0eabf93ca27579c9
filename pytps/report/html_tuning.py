"""The HTML page of a tuning (`pytps sweep --serve … --search … --html`): each server
configuration's capacity bracket drawn as a bar from its low edge (served) to its high edge
(failed), the ranking with overlaps noted, and each configuration's start-up figures; read from
tuning.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytps.measure.catalogue import figure_heading
from pytps.report.html_page import Page, bokeh_module, e, meta_list, write_page


def tuning_page(directory: Path, index: dict[str, Any]) -> Page:
    page = Page(f"pytps tuning: {directory.name}")
    page.add(f"<h1>pytps tuning: {e(directory.name)}</h1>")
    grid = index.get("grid") or {}
    page.add(
        meta_list(
            [
                ("served command", index.get("serve")),
                ("server grid", "; ".join(f"{k} = {', '.join(v)}" for k, v in grid.items())),
                ("started (UTC)", index.get("started_utc")),
                ("results folder", str(directory)),
            ]
        )
    )
    configs = index.get("configurations") or []
    axis = next((c.get("axis") for c in configs if c.get("axis")), "rate")
    unit = "req/s" if axis == "rate" else "concurrent requests"
    ranked = [r for r in index.get("ranking") or [] if r.get("rank") is not None]
    if ranked:
        page.add(f"<h2>Capacity per configuration ({e(unit)})</h2>")
        page.add(
            '<p class="note">Each bar: the highest load that held the SLO (left end) to the lowest that did '
            "not (right end). Where two bars overlap, their order is not measured.</p>"
        )
        page.add(page.plot(_bracket_plot(ranked, unit)))
    rows = []
    for r in index.get("ranking") or []:
        entry: dict[str, Any] = next((c for c in configs if c["name"] == r["name"]), {})
        cold = (entry.get("startup") or {}).get("cold") or {}
        bracket = (
            "—" if r["low"] is None else f"{r['low']:.4g} – {'∞' if r['high'] is None else format(r['high'], '.4g')}"
        )
        note = f"overlaps {', '.join(r['overlaps'])}" if r["overlaps"] else (entry.get("reason") or "")
        ready = cold.get("ready_s")
        rows.append(
            f"<tr><td>{e(r['rank'] or '—')}</td><td>{e(r['name'])}</td><td>{e(bracket)}</td>"
            f"<td>{e('—' if ready is None else f'{ready:.3f}')}</td><td>{e(note)}</td></tr>"
        )
    page.add(
        "<h2>Ranking</h2><table><tr><th>rank</th><th>configuration</th>"
        f"<th>capacity [{e(unit)}]</th><th>{e(_READY)}</th><th>note</th></tr>" + "".join(rows) + "</table>"
    )
    return page


# The cold start's readiness, as the store keeps it (measure/catalogue).
_READY = figure_heading("server_ready_s")


def _bracket_plot(ranked: list[dict[str, Any]], unit: str) -> Any:
    bokeh_module()  # bokeh is installed (a one-line error otherwise)
    from bokeh.models import FactorRange
    from bokeh.plotting import figure

    names = [r["name"] for r in ranked][::-1]
    fig = figure(
        y_range=FactorRange(*names),
        height=80 + 40 * len(names),
        width=760,
        x_axis_label=f"capacity [{unit}]",
        toolbar_location=None,
    )
    lows = [r["low"] for r in ranked][::-1]
    highs = [r["high"] if r["high"] is not None else r["low"] * 1.5 or 1.0 for r in ranked][::-1]
    fig.hbar(y=names, left=lows, right=highs, height=0.5, fill_alpha=0.5)
    fig.scatter(x=lows, y=names, size=8, marker="circle")
    return fig


def write_tuning_page(directory: str | Path, out: str | None) -> Path:
    folder = Path(directory)
    index = json.loads((folder / "tuning.json").read_text())
    return write_page(tuning_page(folder, index), out or folder / "report.html")
