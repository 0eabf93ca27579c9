"""The HTML page of `pytps rank --html` (docs/rank.md): the table, the verdict's lines, the Pareto
scatter of accuracy against speed with interval whiskers, the pairwise matrix of differences, and,
with rounds, the objective of each endpoint per round. Offline like every pytps page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytps.report.html_page import Page, e, meta_list, write_page
from pytps.report.rank import fmt_diff
from pytps.report.rank_tables import headers, rows

_COLORS = ("#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#d6616b", "#8c6d31", "#17becf")


def pareto_plot(v: dict[str, Any]) -> Any:
    """Accuracy (or, ungraded, nothing but speed) against the objective, each endpoint a point
    with both 95% intervals as whiskers; the Pareto front ringed."""
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    obj = v["objective"]
    scale = 1e3 if obj["unit"] == "s" else 1.0
    unit = "ms" if obj["unit"] == "s" else obj["unit"]
    fig = figure(title="Pareto: accuracy against the objective", height=340, sizing_mode="stretch_width",
                 tools="pan,wheel_zoom,box_zoom,reset,save")  # fmt: skip
    fig.toolbar.logo = None
    fig.xaxis.axis_label = f"{obj['label']} [{unit}]"
    fig.yaxis.axis_label = "accuracy"
    for k, ep in enumerate(v["endpoints"]):
        if ep["objective"] is None:
            continue
        x = ep["objective"] * scale
        y = ep["accuracy"] if ep["accuracy"] is not None else 0.0
        color = _COLORS[k % len(_COLORS)]
        src = ColumnDataSource({"x": [x], "y": [y], "name": [ep["name"]], "rank": [str(ep["rank"] or "not eligible")]})
        fig.scatter("x", "y", source=src, size=11, color=color, legend_label=ep["name"])
        if ep.get("pareto"):
            fig.scatter([x], [y], size=19, fill_alpha=0, line_color=color, line_width=2)
        if ep["objective_ci95"]:
            lo, hi = (c * scale for c in ep["objective_ci95"])
            fig.segment([lo], [y], [hi], [y], color=color, line_width=2)
        if ep["accuracy_ci95"]:
            fig.segment([x], [ep["accuracy_ci95"][0]], [x], [ep["accuracy_ci95"][1]], color=color, line_width=2)
    tips = [("endpoint", "@name"), ("rank", "@rank"), (unit, "@x{0.0}"), ("accuracy", "@y{0.000}")]
    fig.add_tools(HoverTool(tooltips=tips))
    fig.legend.location = "bottom_right"
    return fig


def rounds_plot(data: dict[str, Any]) -> Any:
    from bokeh.plotting import figure

    obj = data["rounds"][-1]["verdict"]["objective"]
    scale = 1e3 if obj["unit"] == "s" else 1.0
    fig = figure(title=f"{obj['label']} per round", height=280, sizing_mode="stretch_width",
                 tools="pan,wheel_zoom,box_zoom,reset,save")  # fmt: skip
    fig.toolbar.logo = None
    fig.xaxis.axis_label = "round"
    fig.yaxis.axis_label = "ms" if obj["unit"] == "s" else obj["unit"]
    for k, (name, row) in enumerate((data.get("over_rounds") or {}).items()):
        pts = [(i + 1, y * scale) for i, y in enumerate(row["objective"]) if y is not None]
        color = _COLORS[k % len(_COLORS)]
        fig.line([p[0] for p in pts], [p[1] for p in pts], color=color, line_width=2, legend_label=name)
        fig.scatter([p[0] for p in pts], [p[1] for p in pts], color=color, size=7)
    return fig


def _matrix(v: dict[str, Any]) -> str:
    """Row − column difference of the objective [95% CI]; a star where it is significant."""
    names = [ep["name"] for ep in v["endpoints"]]
    unit = v["objective"]["unit"]
    cell: dict[tuple[str, str], str] = {}
    for p in v["pairs"]:
        if p["diff"] is None or p["ci95"] is None:
            continue
        for a, b, s in ((p["a"], p["b"], 1.0), (p["b"], p["a"], -1.0)):
            lo, hi = sorted((s * p["ci95"][0], s * p["ci95"][1]))
            star = " *" if p["significant"] else ""
            cell[(b, a)] = f"{fmt_diff(s * p['diff'], unit)} [{fmt_diff(lo, unit)}, {fmt_diff(hi, unit)}]{star}"
    head = "".join(f"<th>− {e(n)}</th>" for n in names)
    body = "".join(
        f"<tr><th>{e(r)}</th>" + "".join(f'<td class="num">{e(cell.get((r, c), "·"))}</td>' for c in names) + "</tr>"
        for r in names
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def rank_page(data: dict[str, Any]) -> Page:
    v = data["rounds"][-1]["verdict"]
    page = Page("pytps rank")
    page.add("<h1>pytps rank</h1>")
    page.add(meta_list([
        ("objective", v["objective"]["label"]),
        ("items", f"{v['items']:,} sent to every endpoint, {data['interleave']}"),
        ("rounds", str(len(data["rounds"]))),
        ("min accuracy", v["constraints"]["min_accuracy"]),
        ("max error rate", v["constraints"]["max_error_rate"]),
    ]))  # fmt: skip
    page.add(
        "<h2>Ranks</h2><table><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in headers(v))
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows(v))
        + "</table>"
    )
    page.add("<ul>" + "".join(f"<li>{e(line)}</li>" for line in v["lines"]) + "</ul>")
    page.add(f'<div class="plots2">{page.plot(pareto_plot(v))}</div>')
    page.add("<h2>Pairwise differences (row − column)</h2>" + _matrix(v))
    page.add(
        f'<p class="note">Paired bootstrap over the same items ({v["resamples"]:,} resamples); * the 95% '
        "interval leaves out 0. Ringed points: the Pareto front of accuracy, E2E p50 and cost.</p>"
    )
    if len(data["rounds"]) > 1:
        page.add("<h2>Over the rounds</h2>")
        page.add(page.plot(rounds_plot(data)))
    return page


def write_rank(data: dict[str, Any], out: str | Path) -> Path:
    return write_page(rank_page(data), out)
