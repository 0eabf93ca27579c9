"""The HTML report's plots, as Bokeh figures (docs/report.md says why Bokeh). Each function takes
data already computed from the saved files (report/saved_run.py) and draws it; none computes a
metric."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import BoxAnnotation, Label, Span
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from pytps.measure.catalogue import Metric, metric
from pytps.report.numbers import fmt
from pytps.report.saved_run import Timeline, cdf_points

TOOLS = "pan,box_zoom,wheel_zoom,reset,save"
PALETTE = Category10_10
# Percentiles marked on every CDF: (summary key, share).
MARKED = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def _figure(title: str, x_label: str, y_label: str, height: int = 300, **kw: Any) -> Any:
    fig = figure(title=title, height=height, sizing_mode="stretch_width", tools=TOOLS, **kw)
    fig.xaxis.axis_label = x_label
    fig.yaxis.axis_label = y_label
    fig.toolbar.logo = None
    return fig


def cdf(
    title: str,
    unit: str,
    scale: float,
    curves: Sequence[tuple[str, np.ndarray]],
    marks: dict[str, Any] | None = None,
) -> Any:
    """The empirical CDF of each (name, values) curve, x in `unit` (values × scale); with `marks`
    (a summary distribution), its p50/p90/p99 marked by a dot and a dashed line, their values in
    the title (labels beside the dots would collide: p90 and p99 are often close)."""
    marked = [(key, share, marks[key] * scale) for key, share in MARKED if marks and marks.get(key) is not None]
    if marked:
        title += " · " + " · ".join(f"{key} {fmt(v, unit)}" for key, _, v in marked) + f" {unit}"
    fig = _figure(
        title,
        f"{curves[0][0] if len(curves) == 1 else 'value'} [{unit}]",
        "share of samples at or below",
        y_range=Range1d(start=0, end=1.02),
    )
    for i, (name, values) in enumerate(curves):
        x, p = cdf_points(values)
        src = ColumnDataSource({"x": x * scale, "p": p})
        kw = {"legend_label": name} if len(curves) > 1 else {}
        fig.step("x", "p", source=src, mode="after", line_width=2, color=PALETTE[i % len(PALETTE)], **kw)
    fig.add_tools(HoverTool(tooltips=[(unit, "@x{0,0.000}"), ("share", "@p{0.0%}")], mode="vline"))
    for key, share, v in marked:
        fig.add_layout(Span(location=v, dimension="height", line_dash="dashed", line_color="#555", line_alpha=0.6))
        fig.scatter([v], [share], size=8, color="black")
        # Right of the dot, where a CDF leaves empty space below its plateau.
        fig.add_layout(
            Label(x=v, y=share, text=key, x_offset=7, y_offset=-12, text_font_size="11px", text_color="#333")
        )
    if len(curves) > 1:
        fig.legend.location = "bottom_right"
    return fig


def timeline(tl: Timeline) -> Any:
    """A row per request (ordered by send time), a bar from its send to its finish, a tick per
    output event."""
    n_rows = max(len(tl.rows), 1)
    ttft, e2e = metric("ttft_s"), metric("e2e_s")
    height = int(min(max(n_rows * 3 + 80, 260), 700))
    fig = _figure(
        "token arrival timeline",
        "seconds since the first measured send",
        "request, by send time",
        height=height,
        y_range=Range1d(start=n_rows - 0.5, end=-0.5),  # the first request at the top
    )
    bars = ColumnDataSource(
        name="timeline_requests",
        data={
            "row": [r["row"] for r in tl.rows],
            "start": [r["start_s"] for r in tl.rows],
            "end": [r["end_s"] for r in tl.rows],
            "index": [r["index"] for r in tl.rows],
            "events": [r["events"] for r in tl.rows],
            "ttft": [ttft.shown(r["ttft_s"]) for r in tl.rows],
            "e2e": [e2e.shown(r["e2e_s"]) for r in tl.rows],
            "outcome": ["ok" if r["ok"] else str(r["error"]) for r in tl.rows],
            "color": ["#9ecae1" if r["ok"] else "#fc9272" for r in tl.rows],
        },
    )
    bar = fig.hbar(y="row", left="start", right="end", height=0.8, source=bars, color="color", alpha=0.6)
    fig.add_tools(
        HoverTool(
            renderers=[bar],
            tooltips=[
                ("request", "@index"),
                ("outcome", "@outcome"),
                ("events", "@events"),
                (ttft.heading, "@ttft{0,0.000}"),
                (e2e.heading, "@e2e{0,0.000}"),
            ],
        )
    )
    ticks = ColumnDataSource(
        name="timeline_ticks", data={"x": tl.tick_x_s, "y0": tl.tick_row - 0.4, "y1": tl.tick_row + 0.4}
    )
    fig.segment(x0="x", x1="x", y0="y0", y1="y1", source=ticks, color="#08306b", line_width=1)
    fig.yaxis.visible = n_rows > 1
    return fig


def throughput(series: list[dict[str, Any]], x_range: Any = None) -> Any:
    """Output tokens that arrived in each whole second (summary.time_series), as bars."""
    kw = {"x_range": x_range} if x_range is not None else {}
    fig = _figure("output throughput over time", "seconds since the first measured send", "output tok/s", 240, **kw)
    src = ColumnDataSource(
        {
            "t": [p["t_s"] + 0.5 for p in series],
            "tokens": [p["output_tokens"] for p in series],
            "done": [p["requests_done"] for p in series],
            "errors": [p["errors"] for p in series],
        }
    )
    fig.vbar(x="t", top="tokens", width=0.9, source=src, color="#3182bd")
    fig.add_tools(
        HoverTool(tooltips=[("second", "@t{0}"), ("output tok/s", "@tokens"), ("done", "@done"), ("failed", "@errors")])
    )
    return fig


def in_flight(t_s: np.ndarray, level: np.ndarray, x_range: Any = None) -> Any:
    kw = {"x_range": x_range} if x_range is not None else {}
    fig = _figure("requests in flight", "seconds since the first measured send", "requests", 240, **kw)
    src = ColumnDataSource({"t": t_s, "n": level})
    fig.step("t", "n", source=src, mode="after", line_width=2, color="#31a354")
    fig.add_tools(HoverTool(tooltips=[("s", "@t{0.000}"), ("in flight", "@n")], mode="vline"))
    return fig


#: The server's series a plot draws together (by unit), with each plot's title and y label.
SERVER_PLOTS = (
    (
        ("requests_running", "requests_waiting", "requests_in_flight"),
        "server: requests running and waiting",
        "requests",
    ),
    (("generation_tokens_per_s",), "server: generation tokens per second between scrapes", "tok/s"),
    (("kv_cache_usage", "gpu_utilization"), "server: KV cache and GPU utilization", "ratio"),
    (("power_w",), "GPU power", "W"),
)
_SERVER_COLORS = ("#e6550d", "#756bb1", "#31a354", "#3182bd")


def server_series(url: str, series: dict[str, tuple[np.ndarray, np.ndarray]], x_range: Any = None) -> list[Any]:
    """The server's series of one URL on the run's time axis (one plot per unit present), each
    point a scrape at its midpoint time."""
    kw = {"x_range": x_range} if x_range is not None else {}
    figs = []
    for names, title, y_label in SERVER_PLOTS:
        present = [n for n in names if n in series]
        if not present:
            continue
        fig = _figure(title, "seconds since the first measured send", y_label, 240, **kw)
        for name, color in zip(present, _SERVER_COLORS, strict=False):
            t, v = series[name]
            src = ColumnDataSource({"t": t, "v": v})
            fig.line("t", "v", source=src, line_width=2, color=color, legend_label=name)
            fig.scatter("t", "v", source=src, size=4, color=color)
        fig.legend.location = "top_left"
        fig.add_tools(HoverTool(tooltips=[("s", "@t{0.000}"), (y_label, "@v{0.000}")]))
        fig.name = f"server {url}: {title}"
        figs.append(fig)
    return figs


def errors(counts: dict[str, int]) -> Any:
    classes = sorted(counts, key=lambda k: -counts[k])
    fig = _figure("errors by class", "requests", "", height=int(80 + 30 * len(classes)), y_range=classes)
    src = ColumnDataSource({"cls": classes, "n": [counts[c] for c in classes]})
    fig.hbar(y="cls", right="n", height=0.7, source=src, color="#de2d26")
    fig.add_tools(HoverTool(tooltips=[("class", "@cls"), ("requests", "@n")]))
    fig.x_range.start = 0
    return fig


def sweep_curve(
    title: str,
    points: list[dict[str, Any]],
    knee: Any,
    best: dict[str, Any] | None,
    x_name: str = "output_throughput_tps",
    y_name: str = "decode_tps_mean",
) -> Any:
    """A headline figure against another, one point per done cell (p["x"], p["y"]: the raw
    headline values), labelled with its value on the swept axis; the knee and max goodput marked.
    By default per-user decode TPS (mean over users) against aggregate output throughput; a sweep
    without output tokens draws E2E against request throughput."""
    from pytps.sweep.cells import headline_metric

    (x_heading, x_m), (y_heading, y_m) = headline_metric(x_name), headline_metric(y_name)
    goodput = metric("goodput_rps")
    fig = _figure(title, x_heading, y_heading, 380)
    points = [{**p, "x": x_m.shown(p["x"]), "y": y_m.shown(p["y"])} for p in points]
    src = ColumnDataSource(
        {
            "x": [p["x"] for p in points],
            "y": [p["y"] for p in points],
            "label": [str(p["value"]) for p in points],
            "goodput": [p.get("goodput_rps") for p in points],
        }
    )
    fig.line("x", "y", source=src, line_width=2, color="#3182bd")
    fig.scatter("x", "y", source=src, size=8, color="#3182bd")
    fig.text("x", "y", text="label", source=src, x_offset=6, y_offset=-4, text_font_size="11px")
    fig.add_tools(
        HoverTool(
            tooltips=[
                ("cell", "@label"),
                (x_heading, "@x{0,0.0}"),
                (y_heading, "@y{0,0.0}"),
                (goodput.heading, "@goodput{0,0.00}"),
            ]
        )
    )
    for mark, color, marker, text in (
        (next((p for p in points if p["value"] == knee), None), "#e6550d", "diamond", "knee"),
        (
            next((p for p in points if best is not None and p["value"] == best.get("value")), None),
            "#31a354",
            "star",
            "max goodput",
        ),
    ):
        if mark is None:
            continue
        fig.scatter([mark["x"]], [mark["y"]], size=18, color=color, marker=marker, alpha=0.8, legend_label=text)
        fig.add_layout(Label(x=mark["x"], y=mark["y"], text=text, x_offset=10, y_offset=10, text_color=color))
    if fig.legend:
        fig.legend.location = "top_right"
    return fig


def scatter(title: str, x_label: str, y: Metric, xs: np.ndarray, ys: np.ndarray, bins: list[dict[str, Any]]) -> Any:
    """One point per request (x a length in tokens, y the metric `y`, drawn in its display unit),
    with the summary's own power-of-two bins as a p50 step line, so the points and results.json agree."""
    fig = _figure(title, x_label, y.heading, 300)
    fig.scatter(xs, ys * y.scale, size=4, alpha=0.35, color="#3182bd", legend_label="requests")
    if bins:
        bin_x = [b["lo"] for b in bins] + [bins[-1]["hi"]]
        bin_y = [b["p50"] * y.scale for b in bins] + [bins[-1]["p50"] * y.scale]
        fig.step(bin_x, bin_y, mode="after", line_width=2, color="#e6550d", legend_label="bin p50 (summary)")
    fig.legend.location = "top_left"
    fig.add_tools(HoverTool(tooltips=[("tokens", "@x"), (y.heading, "@y{0.000}")]))
    return fig


def search_probes(axis: str, probes: list[dict[str, Any]], capacity: dict[str, Any]) -> Any:
    """A capacity search (sweep.json's `search`): each probe's requests finished per second against
    its load, coloured by its verdict and numbered in the order probed, with the answer's bracket
    [highest pass, lowest fail] shaded. Past saturation the points flatten at the capacity."""
    completion = metric("request_throughput_rps")
    load_label = f"load [{completion.unit}]" if axis == "rate" else "requests in flight"
    fig = _figure("capacity search: the probes", load_label, completion.heading, 340)
    from pytps.report.verdicts import COLORS, PROBE_CLASSES

    # The verdicts' colours, as every page draws them (report/verdicts.py).
    colors = {status: COLORS[cls] for status, cls in PROBE_CLASSES.items()}
    for status, color in colors.items():
        chosen = [(i, p) for i, p in enumerate(probes, start=1) if p["status"] == status and p.get("completion_rps")]
        if not chosen:
            continue
        src = ColumnDataSource(
            {
                "x": [p["load"] for _, p in chosen],
                "y": [p["completion_rps"] for _, p in chosen],
                "n": [str(i) for i, _ in chosen],
            }
        )
        fig.scatter("x", "y", source=src, size=10, color=color, legend_label=status)
        fig.text("x", "y", text="n", source=src, x_offset=7, y_offset=-4, text_font_size="11px")
    low, high = capacity.get("low"), capacity.get("high")
    if low is not None and high is not None:
        fig.add_layout(BoxAnnotation(left=low, right=high, fill_color="#756bb1", fill_alpha=0.2))
        fig.add_layout(Label(x=low, y=0, y_units="screen", text="capacity", x_offset=4, text_color="#756bb1"))
    fig.add_tools(HoverTool(tooltips=[("probe", "@n"), (load_label, "@x{0,0.0}"), (completion.heading, "@y{0,0.0}")]))
    if fig.legend:
        fig.legend.location = "top_left"
    return fig


def accuracy_curve(title: str, axis: str, points: list[tuple[float, float, float, float]]) -> Any:
    """Accuracy per sweep cell (value, accuracy, interval low, high), in %, with its Wilson
    interval as a whisker: quality under load as one curve."""
    acc = metric("accuracy")
    fig = _figure(title, axis, acc.heading, 300, y_range=Range1d(start=0, end=1.02 * acc.scale))
    xs = [p[0] for p in points]
    fig.line(xs, [p[1] * acc.scale for p in points], line_width=2, color="#3182bd", legend_label=acc.label)
    fig.scatter(xs, [p[1] * acc.scale for p in points], size=6, color="#3182bd")
    fig.segment(
        xs, [p[2] * acc.scale for p in points], xs, [p[3] * acc.scale for p in points], color="#3182bd",
        legend_label="95% CI",
    )  # fmt: skip
    fig.legend.location = "bottom_left"
    return fig
