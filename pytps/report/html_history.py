"""`pytps history --html FILE`: the trend page. One section per group of comparable runs: its
workload as a short table (the fingerprint's JSON behind a disclosure), one plot per metric over
time and the table of values.

Every plot draws the baseline (a dashed line) and the band of no significant change: the check's
`--max-change` limit around the baseline (not the bootstrap interval: that belongs to one comparison,
the band to the whole plot). Each run `history check` flags (report.history.check_each_run: the same
check on each run as if it were the latest) is marked in its verdict's colour (report.verdicts), its
verdict in the hover and in the table. Values are absolute by default, or the change against the
baseline in % (`--relative`). Labels and units come from the metric catalogue. Offline like the run
report: Bokeh's JavaScript inlined (pytps.report.html_page.Page)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.measure.catalogue import figure_heading, of_figure
from pytps.report import verdicts
from pytps.report.history import describe_comparable, fmt_change, fmt_value, unit_of
from pytps.report.html_page import Page, e, write_page
from pytps.report.html_page import bokeh_module as _bokeh

#: The default limit the band is drawn with (history check's --max-change default).
DEFAULT_LIMIT = 0.10


def _when(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def _verdict_of(p: dict[str, Any]) -> tuple[str, str]:
    """(class, words) of a point's check (trend points carry `check`, set by write_history's caller)."""
    c = p.get("check")
    if not c:
        return "", "not checked (the check needs 2 earlier complete runs)"
    return c["status"], c["verdict"]


def better_word(metric: str) -> str | None:
    m = of_figure(metric)
    return None if m is None or m.better is None else m.better


def trend_plot(metric: str, m: dict[str, Any], baseline: int, limit: float, relative: bool = False) -> Any:
    from bokeh.models import ColumnDataSource, HoverTool, Range1d
    from bokeh.models.annotations import BoxAnnotation, Span
    from bokeh.plotting import figure

    scale, unit = unit_of(metric)
    points = [p for p in m["points"] if p["value"] is not None]
    base = next((p for p in points if p["id"] == baseline), None)

    def y(p: dict[str, Any]) -> float | None:
        if not relative:
            return float(p["value"] * scale)
        rel = p["change_vs_baseline"]
        return None if rel is None else float(rel * 100)

    points = [p for p in points if y(p) is not None]
    classes = [_verdict_of(p) for p in points]
    data: dict[str, list[Any]] = {
        "when": [_when(p["when_utc"]) for p in points],
        "y": [y(p) for p in points],
        "value": [fmt_value(metric, p["value"]) for p in points],
        "id": [p["id"] for p in points],
        "when_text": [p["when_utc"] for p in points],
        "vs_prev": [fmt_change(p["change_vs_previous"]) for p in points],
        "vs_base": [fmt_change(p["change_vs_baseline"]) for p in points],
        "verdict": [words for _, words in classes],
        "folder": [p["folder"] for p in points],
    }
    better = better_word(metric)
    heading = figure_heading(metric)
    title = heading + (" · change against the baseline, in %" if relative else "")
    title += f" · {better} is better" if better else ""
    fig = figure(
        title=title,
        height=260,
        sizing_mode="stretch_width",
        x_axis_type="datetime",
        tools="pan,box_zoom,wheel_zoom,reset,save",
    )
    fig.toolbar.logo = None
    fig.xaxis.axis_label = "run date (UTC)"
    fig.yaxis.axis_label = "% of the baseline's value, − 100" if relative else (unit or "value")
    src = ColumnDataSource(data, name=f"runs {metric}")
    fig.line("when", "y", source=src, line_width=2, color=verdicts.COLORS["ok"])
    dots = fig.scatter("when", "y", source=src, size=7, color=verdicts.COLORS["ok"])
    tips = [("run", "@id"), ("when", "@when_text"), ("value", "@value"), ("vs previous", "@vs_prev")]
    tips += [("vs baseline", "@vs_base"), ("history check", "@verdict"), ("folder", "@folder")]
    renderers: list[Any] = [dots]
    for status in ("regression", "improvement"):
        chosen = [i for i, (c, _) in enumerate(classes) if c == status]
        if not chosen:
            continue
        marks = ColumnDataSource({k: [v[i] for i in chosen] for k, v in data.items()}, name=f"{status} {metric}")
        renderers.append(
            fig.scatter(
                "when", "y", source=marks, size=13, color=verdicts.COLORS[status], name=status, legend_label=status
            )
        )
    fig.add_tools(HoverTool(renderers=renderers, tooltips=tips))
    ys = [v for v in data["y"] if v is not None]
    if base is not None:
        centre = 0.0 if relative else float(base["value"] * scale)
        half = limit * 100 if relative else abs(centre) * limit
        fig.add_layout(Span(location=centre, dimension="width", line_dash="dashed", line_color="#444", name="baseline"))
        fig.add_layout(
            BoxAnnotation(
                bottom=centre - half,
                top=centre + half,
                fill_color="#888",
                fill_alpha=0.15,
                line_alpha=0,
                name="no-change band",
            )
        )
        ys += [centre - half, centre + half]
    if ys:
        # The axis holds the band and every point: a change inside the band looks as small as it is.
        lo, hi = min(ys), max(ys)
        pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
        fig.y_range = Range1d(start=lo - pad, end=hi + pad)
    if fig.legend:
        fig.legend.location = "top_left"
    return fig


def _workload_rows(comparable: dict[str, Any]) -> list[tuple[str, str]]:
    """The fingerprint's workload in a few rows: API, lengths or dataset, load, SLO, grading."""
    wl, load, slo = comparable.get("workload") or {}, comparable.get("load") or {}, comparable.get("slo") or {}
    rows = [("API", str(comparable.get("api") or "-"))]
    kind = wl.get("kind", "?")
    if kind in ("synthetic", "sessions"):
        rows.append(("lengths", f"input {wl.get('input_tokens')} tok, output {wl.get('output_tokens')} tok"))
    elif kind == "dataset":
        rows.append(("dataset", str(wl.get("source"))))
    elif kind == "trace":
        rows.append(("trace", str((wl.get("trace") or {}).get("path"))))
    else:
        rows.append(("workload", str(kind)))
    mode = load.get("mode")
    level = {"concurrency": f"concurrency {load.get('concurrency')}", "rate": f"rate {load.get('rate_rps')} req/s"}
    arrival = f", {load.get('arrival')} arrivals" if mode == "rate" and load.get("arrival") else ""
    rows.append(("load", level.get(str(mode), str(mode)) + arrival))
    slos = [f"{k} {v}" for k, v in slo.items() if v]
    rows.append(("SLO", "; ".join(slos) if slos else "none"))
    grading = comparable.get("grading")
    if isinstance(grading, dict):
        graders = ", ".join(map(str, grading.get("graders") or [])) or "-"
        extracts = ", ".join(map(str, grading.get("extracts") or []))
        rows.append(("grading", graders + (f" (extract: {extracts})" if extracts else "")))
    return rows


def _table_head(t: dict[str, Any]) -> str:
    cells = []
    for metric in t["metrics"]:
        m = of_figure(metric)
        tip = f' title="{e(m.description)}"' if m is not None else ""
        cells.append(f"<th{tip}>{e(figure_heading(metric))}</th><th>Δ baseline</th>")
    return f"<tr><th>run</th><th>when (UTC)</th>{''.join(cells)}<th>folder</th></tr>"


def history_page(trends: list[dict[str, Any]], limit: float = DEFAULT_LIMIT, relative: bool = False) -> Page:
    page = Page("pytps history")
    page.add("<h1>pytps history</h1>")
    shown = "the change against the baseline, in %" if relative else "each run's value"
    page.add(
        '<p class="note">Each section is one group of comparable runs: one endpoint, one model, one workload '
        f"fingerprint. The plots draw {shown}. The dashed line is the baseline run; the grey band is "
        f"±{limit * 100:g}% around it, the largest change <code>pytps history check</code> lets pass "
        "(its <code>--max-change</code>; the check also needs its bootstrap 95% interval to leave out no change, "
        "so a point outside the band is not always flagged). Each run the check flags, as it would have when "
        f'that run was the latest, is marked: <span class="regression">regression</span> or '
        '<span class="improvement">improvement</span>, its verdict in the hover and the table.</p>'
    )
    for t in trends:
        page.add(f"<h2>{e(t['endpoint'])} · {e(t['model'])} · fingerprint {e(t['fingerprint'])}</h2>")
        rows = [*_workload_rows(t["workload"]), ("baseline", f"run {t['baseline']}")]
        page.add(
            '<table class="workload">'
            + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
            + "</table>"
        )
        page.add(
            f"<details><summary>Everything the fingerprint covers ({e(describe_comparable(t['workload']))})</summary>"
            f'<pre class="json">{e(json.dumps(t["workload"], sort_keys=True, indent=2))}</pre></details>'
        )
        plots = [page.plot(trend_plot(metric, m, t["baseline"], limit, relative)) for metric, m in t["metrics"].items()]
        page.add('<div class="plots2">' + "".join(plots) + "</div>")
        body = []
        first = next(iter(t["metrics"].values()))
        for i, p0 in enumerate(first["points"]):
            cells, row_classes = [], set()
            for metric, m in t["metrics"].items():
                p = m["points"][i]
                cls, words = _verdict_of(p)
                row_classes.add(cls)
                mark = f" {cls}" if cls in ("regression", "improvement") else ""
                cells.append(
                    f'<td class="num{mark}" title="{e(words)}">{e(fmt_value(metric, p["value"]))}</td>'
                    f'<td class="num{mark}">{e(fmt_change(p["change_vs_baseline"]))}</td>'
                )
            row_cls = next((c for c in ("regression", "improvement") if c in row_classes), "")
            when = f'<td style="white-space: nowrap">{e(p0["when_utc"])}</td>'
            body.append(
                f'<tr class="{row_cls}"><td>{p0["id"]}</td>{when}{"".join(cells)}'
                f'<td class="path">{e(p0["folder"])}</td></tr>'
            )
        page.add(f'<table class="runs">{_table_head(t)}{"".join(body)}</table>')
    return page


def write_history(
    trends: list[dict[str, Any]], out: str | Path, limit: float = DEFAULT_LIMIT, relative: bool = False
) -> Path:
    _bokeh()  # one clear line when Bokeh is missing
    return write_page(history_page(trends, limit, relative), out)
