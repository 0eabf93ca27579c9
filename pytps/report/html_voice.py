"""The HTML pages of voice runs (`--html`, docs/voice.md): a text-to-speech run's time-to-first-audio
distribution and its stall timeline (each request's playback as the simulated player heard it: when
it started and when and how long it stalled), a speech-to-text run's time to the final transcript;
and a voice sweep's curves against concurrency (time to first audio and the stall rate, or the
final transcript's time and WER). Labels and units from pytps.measure.catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytps.measure.catalogue import figure_heading, metric, of_figure
from pytps.report.html_page import Page, bokeh_module, e, meta_list, write_page

__all__ = ["voice_run_page", "voice_sweep_page", "write_voice_html", "write_voice_sweep_html"]

_WIDTH = 760  # fits a 1280 px window beside the page's margins


def _histogram(values_s: list[float], key: str) -> Any:
    bokeh_module()
    import numpy as np
    from bokeh.plotting import figure

    m = metric(key)
    shown = np.asarray(values_s, dtype=np.float64) * m.scale
    counts, edges = np.histogram(shown, bins=min(30, max(5, len(shown) // 2)))
    fig = figure(width=_WIDTH, height=260, x_axis_label=m.heading, y_axis_label="requests", toolbar_location=None)
    fig.quad(top=counts, bottom=0, left=edges[:-1], right=edges[1:], fill_alpha=0.6)
    return fig


def _stall_timeline(rows: list[dict[str, Any]]) -> Any:
    """One line per request, on the run's clock (seconds from the first send): grey while its audio
    was awaited, blue while it played, red while it stalled."""
    bokeh_module()
    from bokeh.plotting import figure

    ok = [r for r in rows if r.get("ok") and r.get("play_start_s") is not None]
    t0 = min(r["t_send_ns"] for r in ok)
    fig = figure(width=_WIDTH, height=min(600, 80 + 14 * len(ok)), x_axis_label="seconds from the run's first send",
                 y_axis_label="request", toolbar_location=None)  # fmt: skip
    wait: dict[str, list[float]] = {"y": [], "l": [], "r": []}
    play: dict[str, list[float]] = {"y": [], "l": [], "r": []}
    stall: dict[str, list[float]] = {"y": [], "l": [], "r": []}
    for r in ok:
        base = (r["t_send_ns"] - t0) / 1e9
        start = base + r["play_start_s"]
        end = start + r["audio_s"] + r["stalled_s"]
        for d, lo, hi in ((wait, base, start), (play, start, end)):
            d["y"].append(r["index"])
            d["l"].append(lo)
            d["r"].append(hi)
        for at, ms in zip(r.get("stall_at_s") or [], r.get("stall_ms") or [], strict=False):
            stall["y"].append(r["index"])
            stall["l"].append(base + at)
            stall["r"].append(base + at + ms / 1e3)
    fig.hbar(y=wait["y"], left=wait["l"], right=wait["r"], height=0.5, color="#bbbbbb", legend_label="awaiting")
    fig.hbar(y=play["y"], left=play["l"], right=play["r"], height=0.5, color="#4477aa", legend_label="playing")
    if stall["y"]:
        fig.hbar(y=stall["y"], left=stall["l"], right=stall["r"], height=0.8, color="#cc3311", legend_label="stalled")
    fig.legend.location = "top_left"
    return fig


def _figures_table(summary: dict[str, Any]) -> str:
    rows = []
    for key, d in (summary.get("figures") or {}).items():
        m = of_figure(key)
        if d is None or m is None:
            continue
        cells = "".join(f"<td>{d[s] * m.scale:.4g}</td>" for s in ("mean", "p50", "p90", "p99", "max"))
        rows.append(f'<tr><td title="{e(m.description)}">{e(m.heading)}</td>{cells}<td>{d["count"]}</td></tr>')
    head = "".join(f"<th>{s}</th>" for s in ("figure", "mean", "p50", "p90", "p99", "max", "n"))
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def voice_run_page(directory: Path, data: dict[str, Any]) -> Page:
    meta, s, rows = data["metadata"], data["summary"], data["requests"]
    speech = meta["api"] == "openai-speech"
    page = Page(f"pytps voice run: {directory.name}")
    page.add(f"<h1>pytps voice run: {e(directory.name)}</h1>")
    api = meta["api"] + (", input_audio chat parts" if meta.get("stt_request") == "chat" else "")
    page.add(meta_list([("API", api), ("model", meta["model"]), ("concurrency", meta["concurrency"]),
                        ("requests ok", f"{s['ok']} of {s['requests']}"), ("date (UTC)", meta.get("date_utc")),
                        ("player buffer", f"{meta['playback_buffer_ms']:g} ms" if speech else None),
                        ("results folder", str(directory))]))  # fmt: skip
    page.add(_figures_table(s))
    key = "ttfa_s" if speech else "final_s"
    values = [float(r[key]) for r in rows if r.get("ok") and r.get(key) is not None]
    if values:
        page.add(f"<h2>{e(metric(key).label)}: distribution</h2>")
        page.add(page.plot(_histogram(values, key)))
    if speech and any(r.get("play_start_s") is not None for r in rows):
        stalled = s.get("stalled_requests", 0)
        page.add("<h2>Playback timeline</h2>")
        page.add(f'<p class="note">Each request as the simulated player heard it, behind a '
                 f"{meta['playback_buffer_ms']:g} ms buffer: {stalled} of {s['ok']} requests stalled.</p>")  # fmt: skip
        page.add(page.plot(_stall_timeline(rows)))
    return page


def write_voice_html(data: dict[str, Any], directory: Path, out: str | None) -> Path:
    return write_page(voice_run_page(directory, data), out or directory / "report.html")


def _curve(cells: list[dict[str, Any]], names: tuple[str, ...], title: str) -> Any:
    bokeh_module()
    from bokeh.plotting import figure

    xs = [c["concurrency"] for c in cells]
    units = {of_figure(n).unit for n in names if of_figure(n) is not None}  # type: ignore[union-attr]
    fig = figure(width=_WIDTH, height=300, x_axis_type="log", x_axis_label="concurrency", title=title,
                 y_axis_label=figure_heading(names[0]) if len(names) == 1 else "[" + ", ".join(units) + "]",
                 toolbar_location=None)  # fmt: skip
    colours = ("#4477aa", "#ee6677", "#228833")
    for name, colour in zip(names, colours, strict=False):
        m = of_figure(name)
        pts = [
            (x, c[name] * (m.scale if m else 1.0)) for x, c in zip(xs, cells, strict=True) if c.get(name) is not None
        ]
        if pts:
            fig.line([p[0] for p in pts], [p[1] for p in pts], color=colour, legend_label=figure_heading(name))
            fig.scatter([p[0] for p in pts], [p[1] for p in pts], color=colour, size=7)
    fig.legend.location = "top_left"
    return fig


def voice_sweep_page(directory: Path, index: dict[str, Any]) -> Page:
    cells = index["cells"]
    speech = index["api"] == "openai-speech"
    page = Page(f"pytps voice sweep: {directory.name}")
    page.add(f"<h1>pytps voice sweep: {e(directory.name)}</h1>")
    knee = index["knee"]
    page.add(meta_list([("API", index["api"]), ("model", index["metadata"].get("model")),
                        ("knee (concurrency)", knee["concurrency"] if knee["concurrency"] is not None else "none"),
                        ("knee's rule", knee["rule"]), ("results folder", str(directory))]))  # fmt: skip
    if speech:
        page.add(page.plot(_curve(cells, ("ttfa_p50", "ttfa_p90", "ttfa_p99"), "time to first audio against load")))
        page.add(page.plot(_curve(cells, ("stall_rate",), "requests that stalled against load")))
    else:
        page.add(page.plot(_curve(cells, ("final_p50", "final_p99"), "final transcript against load")))
        page.add(page.plot(_curve(cells, ("wer",), "WER against load")))
    return page


def write_voice_sweep_html(index: dict[str, Any], directory: Path, out: str | None) -> Path:
    return write_page(voice_sweep_page(directory, index), out or directory / "report.html")
