"""`pytps history --html FILE`: the trend page. One section per group of comparable runs, one plot per
metric over time (each run a point, its id and folder on hover, the baseline marked), and the table
of values with their changes. Offline like the run report: Bokeh's JavaScript inlined (pytps.report.html.Page)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.report.history import describe_comparable, fmt_change, fmt_value, unit_of
from pytps.report.html_page import Page, e, write_page
from pytps.report.html_page import bokeh_module as _bokeh


def _when(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def trend_plot(metric: str, m: dict[str, Any], baseline: int) -> Any:
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.models.annotations import Span
    from bokeh.plotting import figure

    scale, unit = unit_of(metric)
    points = [p for p in m["points"] if p["value"] is not None]
    data = {
        "when": [_when(p["when_utc"]) for p in points],
        "value": [p["value"] * scale for p in points],
        "id": [p["id"] for p in points],
        "when_text": [p["when_utc"] for p in points],
        "vs_prev": [fmt_change(p["change_vs_previous"]) for p in points],
        "vs_base": [fmt_change(p["change_vs_baseline"]) for p in points],
        "folder": [p["folder"] for p in points],
    }
    better = "higher" if m["higher_is_better"] else "lower"
    fig = figure(
        title=f"{metric} ({better} is better)",
        height=260,
        sizing_mode="stretch_width",
        x_axis_type="datetime",
        tools="pan,box_zoom,wheel_zoom,reset,save",
    )
    fig.toolbar.logo = None
    fig.xaxis.axis_label = "run date (UTC)"
    fig.yaxis.axis_label = f"{metric} [{unit}]" if unit else metric
    src = ColumnDataSource(data)
    fig.line("when", "value", source=src, line_width=2)
    dots = fig.scatter("when", "value", source=src, size=7)
    tips = [("run", "@id"), ("when", "@when_text"), ("value", "@value{0.000}"), ("vs previous", "@vs_prev")]
    tips += [("vs baseline", "@vs_base"), ("folder", "@folder")]
    fig.add_tools(HoverTool(renderers=[dots], tooltips=tips))
    base = next((p for p in points if p["id"] == baseline), None)
    if base is not None:
        fig.add_layout(Span(location=base["value"] * scale, dimension="width", line_dash="dashed", line_color="gray"))
    return fig


def history_page(trends: list[dict[str, Any]]) -> Page:
    page = Page("pytps history")
    page.add("<h1>pytps history</h1>")
    page.add(
        '<p class="note">Each section is one group of comparable runs: one endpoint, one model, one workload '
        "fingerprint. The dashed line is the baseline run.</p>"
    )
    for t in trends:
        page.add(f"<h2>{e(t['endpoint'])} · {e(t['model'])} · fingerprint {e(t['fingerprint'])}</h2>")
        page.add(
            f'<p class="note">{e(describe_comparable(t["workload"]))}; baseline: run {e(t["baseline"])}. '
            f"Everything the fingerprint covers: <code>{e(json.dumps(t['workload'], sort_keys=True))}</code></p>"
        )
        plots = [page.plot(trend_plot(metric, m, t["baseline"])) for metric, m in t["metrics"].items()]
        page.add('<div class="plots2">' + "".join(plots) + "</div>")
        head = "".join(f"<th>{e(metric)}</th><th>Δprev</th><th>Δbase</th>" for metric in t["metrics"])
        rows = []
        first = next(iter(t["metrics"].values()))
        for i, p0 in enumerate(first["points"]):
            cells = "".join(
                f'<td class="num">{e(fmt_value(metric, m["points"][i]["value"]))}</td>'
                f'<td class="num">{e(fmt_change(m["points"][i]["change_vs_previous"]))}</td>'
                f'<td class="num">{e(fmt_change(m["points"][i]["change_vs_baseline"]))}</td>'
                for metric, m in t["metrics"].items()
            )
            when = f'<td style="white-space: nowrap">{e(p0["when_utc"])}</td>'
            rows.append(f"<tr><td>{p0['id']}</td>{when}{cells}<td>{e(p0['folder'])}</td></tr>")
        # A wide table scrolls in its own box rather than widening the page.
        page.add(
            '<div style="overflow-x: auto"><table><tr><th>run</th><th>when (UTC)</th>'
            f"{head}<th>folder</th></tr>{''.join(rows)}</table></div>"
        )
    return page


def write_history(trends: list[dict[str, Any]], out: str | Path) -> Path:
    _bokeh()  # one clear line when Bokeh is missing
    return write_page(history_page(trends), out)
