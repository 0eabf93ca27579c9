"""`pytps report DIR --html [FILE]` (and `run`/`sweep --html`, `compare --html FILE`): one
self-contained HTML file, Bokeh's JavaScript inlined from the installed package, no CDN, so it
opens offline (docs/report.md). Read from the saved files only, as every report."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytps import __version__
from pytps.errors import ConfigError
from pytps.report import run_warnings
from pytps.report.console import table_rows
from pytps.report.numbers import fmt
from pytps.report.saved_run import TIMELINE_MAX_ROWS, TIMELINE_MAX_TICKS, SavedRun, load_saved_run, timeline

#: Written inside the results folder when --html is given no file.
DEFAULT_NAME = "report.html"

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: 2px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: .6em 0; }
dl.meta dt { color: #666; } dl.meta dd { margin: 0; }
.warn { background: #fff8e1; border-left: 4px solid #f0ad4e; padding: 4px 10px; margin: 4px 0; }
.note { color: #555; } .sig { font-weight: bold; }
.plots2 { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.plots3 { display: grid; grid-template-columns: 1fr 1fr 1fr; gap: 10px; }
@media (max-width: 900px) { .plots2, .plots3 { grid-template-columns: 1fr; } }
footer { margin-top: 2em; color: #777; font-size: 12px; }
"""


def _bokeh() -> Any:
    try:
        import bokeh.embed
        import bokeh.resources
    except ImportError:
        raise ConfigError('--html needs the bokeh package: pip install "pytps[html]"') from None
    return bokeh


def e(value: Any) -> str:
    return html.escape(str(value))


class Page:
    """HTML sections and Bokeh figures, in order; each figure becomes a <div> where its
    placeholder stands."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.figures: dict[str, Any] = {}

    def add(self, text: str) -> None:
        self.parts.append(text)

    def plot(self, fig: Any) -> str:
        """A placeholder for the figure, to put where it is to be drawn."""
        name = f"plot{len(self.figures)}"
        self.figures[name] = fig
        return f"@@{name}@@"

    def render(self) -> str:
        bokeh = _bokeh()
        # Only BokehJS's core: the report uses no widgets, tables or WebGL (1.3 MB rather than 4 MB).
        resources = bokeh.resources.Resources(mode="inline", components=["bokeh"])
        script, divs = bokeh.embed.components(self.figures) if self.figures else ("", {})
        body = "\n".join(self.parts)
        for name, div in divs.items():
            body = body.replace(f"@@{name}@@", f'<div class="plot" data-plot="{name}">{div}</div>')
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{e(self.title)}</title>\n<style>{CSS}</style>\n"
            f"{resources.render_js()}\n</head>\n<body>\n{body}\n"
            f"<footer>pytps {e(__version__)} · plots by Bokeh {e(bokeh.__version__)}, its JavaScript inlined: "
            "this file needs no network.</footer>\n"
            f"{script}\n</body>\n</html>\n"
        )


def _write(page: Page, out: str | Path) -> Path:
    path = Path(out)
    text = page.render()
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the HTML report to {path}: {exc.strerror}") from exc
    return path


def _meta_list(items: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items if v is not None and v != "")
    return f'<dl class="meta">{rows}</dl>'


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A nested object as (dotted key, scalar) pairs: how keys this report does not know (the
    calibration envelope) are shown."""
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        out = []
        for i, v in enumerate(value):
            out += _flatten(v, f"{prefix}[{i}]")
        return out
    return [(prefix, json.dumps(value) if isinstance(value, (list, bool)) or value is None else value)]


def _load_text(meta: dict[str, Any]) -> str:
    load = meta.get("load") or {}
    if load.get("mode") == "rate":
        text = f"rate {load.get('rate_rps')} req/s ({load.get('arrival')} arrivals)"
        if load.get("max_concurrency"):
            text += f", at most {load['max_concurrency']} in flight"
        return text
    return f"concurrency {load.get('concurrency')}"


def _header(run: SavedRun) -> str:
    meta = run.meta
    ep = meta.get("endpoint") or {}
    wl = meta.get("workload") or {}
    tls = meta.get("tls") or {}
    client = meta.get("client") or {}
    load = meta.get("load") or {}
    size = f"{load.get('requests')} requests" if load.get("requests") else f"{load.get('duration_s')} s"
    items: list[tuple[str, Any]] = [
        (
            "measured",
            f"{meta.get('model')} via {meta.get('api')} at {ep.get('scheme')}://{ep.get('host')}"
            + (f":{ep['port']}" if ep.get("port") else "")
            + str(ep.get("path") or ""),
        ),
        ("when (UTC)", meta.get("date_utc")),
        ("model", meta.get("model")),
        (
            "prompt size [tokens]",
            wl.get("input_tokens") if wl.get("kind") != "dataset" else f"dataset {wl.get('source')}",
        ),
        ("output size [tokens]", wl.get("output_tokens") or "each record's own"),
        ("load", f"{_load_text(meta)}, {size}, {load.get('warmup', 0)} warm-up"),
        (
            "transport",
            str(meta.get("transport"))
            + (f" over TLS ({tls.get('library') or 'Python ssl'})" if tls else "")
            + f", event loop {meta.get('event_loop')}",
        ),
        (
            "client host",
            f"{client.get('host')} ({client.get('cpu_count')} CPUs, {client.get('os')}, Python {client.get('python')})",
        ),
        ("pytps version", meta.get("pytps_version")),
        ("token counts from", run.summary.get("token_source")),
        ("results folder", str(run.path)),
    ]
    out = [f"<h1>pytps report: {e(meta.get('model'))}</h1>", _meta_list(items)]
    envelope = run.results.get("envelope", meta.get("envelope"))
    if envelope is not None:
        out.append("<h2>Calibration envelope</h2>")
        out.append(
            '<p class="note">What this client can measure on this host (pytps calibrate); '
            "figures near its floor are not to be trusted to more than it.</p>"
        )
        out.append(_meta_list(_flatten(envelope)) if isinstance(envelope, (dict, list)) else f"<p>{e(envelope)}</p>")
    warnings = run_warnings.collect(run.results)
    if warnings:
        out.append("<h2>Warnings</h2>")
        out += [f'<div class="warn">{e(w)}</div>' for w in warnings]
    return "\n".join(out)


def summary_table(summary: dict[str, Any]) -> str:
    """The console's table (report/console.table_rows: pytps's figures, then the server's own
    timings when it reported them), every figure with its unit."""
    head = "".join(f"<th>{c}</th>" for c in ("metric [unit]", "mean", "± σ", "p50", "p90", "p99", "min", "max", "n"))
    rows = []
    for label, unit, d, scale in table_rows(summary):
        cells = [
            fmt(None if d.get(k) is None else d[k] * scale, unit)
            for k in ("mean", "stddev", "p50", "p90", "p99", "min", "max")
        ]
        rows.append(
            f"<tr><td>{e(label)} [{e(unit)}]</td>"
            + "".join(f'<td class="num">{e(c)}</td>' for c in cells)
            + f'<td class="num">{d["count"]}</td></tr>'
        )

    def num(v: Any, unit: str) -> str:
        return fmt(v, unit) if isinstance(v, (int, float)) else "-"

    s = summary
    total, ok = s.get("requests_total", 0), s.get("requests_ok", 0)
    run_level = [
        ("output throughput, all users", num(s.get("output_throughput_tps"), "tok/s"), "tok/s"),
        ("steady output throughput", num(s.get("steady_output_throughput_tps"), "tok/s"), "tok/s"),
        ("request throughput", num(s.get("request_throughput_rps"), "req/s"), "req/s"),
        ("goodput", num(s.get("goodput_rps"), "req/s"), "useful req/s"),
        ("output tokens", f"{s.get('output_tokens_total', 0):,}", "tokens"),
        ("requests ok / measured", f"{ok:,} / {total:,}", "requests"),
        ("measured window", num(s.get("measured_window_s"), "s"), "s"),
    ]
    if s.get("client_cpu_us_per_token") is not None:
        run_level.append(("client CPU per token", num(s["client_cpu_us_per_token"], "µs"), "µs"))
    run_rows = "".join(
        f'<tr><td>{e(name)} [{e(unit)}]</td><td class="num">{e(v)}</td></tr>' for name, v, unit in run_level
    )
    return (
        f"<h2>Summary</h2>\n<table><tr>{head}</tr>{''.join(rows)}</table>\n"
        f"<table><tr><th>run</th><th>value</th></tr>{run_rows}</table>"
    )


def run_page(run: SavedRun) -> Page:
    from pytps.report import html_plots as plots

    s = run.summary
    page = Page(f"pytps report: {run.meta.get('model')} {run.meta.get('date_utc')}")
    page.add(_header(run))
    page.add(summary_table(s))

    page.add("<h2>Distributions</h2>")
    page.add(
        '<p class="note">Empirical CDFs over successful measured requests (ITL: one sample per token); '
        "the marked p50, p90 and p99 are the summary's own figures.</p>"
    )
    cdfs = []
    for key, title in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL")):
        values = run.itl_samples_s() if key == "itl_s" else run.values(key)
        if len(values):
            cdfs.append(page.plot(plots.cdf(title, "ms", 1e3, [(title, values)], s.get(key))))
    page.add(f'<div class="plots3">{"".join(cdfs)}</div>' if cdfs else "<p>No successful request.</p>")
    _grading_section(page, run)

    tl = timeline(run)
    page.add("<h2>Token arrival timeline</h2>")
    if tl.sampled:
        what = (
            f"{len(tl.rows):,} of {tl.requests_total:,} requests drawn ({tl.ticks:,} event ticks), sampled evenly "
            f"by request index: the page draws at most {TIMELINE_MAX_ROWS:,} requests and {TIMELINE_MAX_TICKS:,} "
            "ticks, so it stays responsive. Every event of a drawn request is a tick."
        )
    else:
        what = f"All {tl.requests_total:,} measured requests, every output event a tick ({tl.ticks:,} ticks)."
    page.add(
        f'<p class="note">One row per request in send order: a bar from its send to its finish '
        f"(red: failed), a tick per output event. {e(what)}</p>"
    )
    tl_fig = plots.timeline(tl)
    page.add(page.plot(tl_fig))

    page.add("<h2>Throughput and requests in flight over time</h2>")
    t_s, level, binned = run.in_flight()
    page.add(
        '<p class="note">Output tokens that arrived in each whole second since the first measured send '
        "(the last second is usually partial), and measured requests in flight, each from its send to its "
        "finish"
        + (f" (binned to {len(t_s):,} points, each its bin's highest level)" if binned else "")
        + ". Zooming one zooms the timeline too.</p>"
    )
    page.add(
        '<div class="plots2">'
        + page.plot(plots.throughput(s.get("time_series") or [], tl_fig.x_range))
        + page.plot(plots.in_flight(t_s, level, tl_fig.x_range))
        + "</div>"
    )

    _workload_sections(page, run)

    page.add("<h2>Errors</h2>")
    errors: dict[str, int] = s.get("errors") or {}
    if errors:
        rows = "".join(f'<tr><td>{e(k)}</td><td class="num">{v:,}</td></tr>' for k, v in errors.items())
        page.add(
            f"<table><tr><th>error class</th><th>requests</th></tr>{rows}</table>"
            '<p class="note">Error classes: docs/metrics.md. requests.jsonl has each one\'s error_detail.</p>'
        )
        page.add(page.plot(plots.errors(errors)))
    else:
        page.add(f"<p>No errors in {s.get('requests_total', 0):,} measured requests.</p>")
    return page


def _grading_section(page: Page, run: SavedRun) -> None:
    """Graded answers: the figures, and E2E of correct and wrong answers as two CDFs."""
    from pytps.report import html_plots as plots
    from pytps.report.grading_lines import grading_lines

    lines = grading_lines(run.results)
    if not lines:
        return
    page.add("<h2>Graded answers</h2>")
    page.add("".join(f"<p>{e(line)}</p>" for line in lines))
    ok = [line for line in run.measured() if line.get("ok") and isinstance(line.get("e2e_s"), (int, float))]
    curves = [
        (name, np.asarray([line["e2e_s"] for line in ok if line.get("correct") is want], dtype=np.float64))
        for name, want in (("correct", True), ("wrong", False))
    ]
    curves = [(name, values) for name, values in curves if len(values)]
    if curves:
        page.add(page.plot(plots.cdf("E2E of correct and wrong answers", "ms", 1e3, curves)))


def _workload_sections(page: Page, run: SavedRun) -> None:
    """Latency against prompt and output length (points from the journal, the summary's bins as a
    line), and, when the run had them, the per-turn figures and the prefix cache's."""
    from pytps.report import html_plots as plots

    s = run.summary
    figs = []
    for x_key, y_key, bins_key, title, x_label, y_label in (
        ("prompt_tokens", "ttft_s", "ttft_by_prompt_tokens", "TTFT against prompt tokens", "prompt tokens", "TTFT"),
        ("output_tokens", "e2e_s", "e2e_by_output_tokens", "E2E against output tokens", "output tokens", "E2E"),
    ):
        x, y, total = run.pairs(x_key, y_key)
        if total:
            drawn = "" if len(x) == total else f" ({len(x):,} of {total:,} requests drawn, evenly by index)"
            fig = plots.scatter(title + drawn, x_label, f"{y_label} [ms]", x, y, s.get(bins_key) or [])
            figs.append(page.plot(fig))
    if figs:
        page.add("<h2>Latency against length</h2>")
        page.add(
            '<p class="note">One point per successful measured request (prompt tokens as the server reported '
            "them); the line is the median of each power-of-two bin, as results.json keeps it.</p>"
        )
        page.add(f'<div class="plots2">{"".join(figs)}</div>')

    turns = s.get("per_turn") or []
    if turns:
        page.add("<h2>Per turn</h2>")
        rows = "".join(
            "<tr>"
            + "".join(
                f'<td class="num">{cell}</td>'
                for cell in (
                    t["turn"],
                    f"{t['requests']:,}",
                    _ms(t.get("ttft_p50_s")),
                    _ms(t.get("ttft_mean_s")),
                    _num(t.get("decode_tps_p50")),
                    _num(t.get("prompt_tokens_mean")),
                    _num(t.get("cached_tokens_mean")),
                )
            )
            + "</tr>"
            for t in turns
        )
        page.add(
            "<table><tr><th>turn</th><th>requests</th><th>TTFT p50 [ms]</th><th>TTFT mean [ms]</th>"
            "<th>decode p50 [tok/s/user]</th><th>prompt tokens, mean</th><th>cached tokens, mean</th></tr>"
            f"{rows}</table>"
        )
    cache = s.get("cache") or {}
    if cache.get("hit_rate") is not None:
        hit = cache["hit_rate"]
        cached_ttft = (cache.get("ttft_mostly_cached_s") or {}).get("p50")
        uncached_ttft = (cache.get("ttft_mostly_uncached_s") or {}).get("p50")
        page.add("<h2>Prefix cache</h2>")
        page.add(
            f"<p>Hit rate {hit:.1%} ({cache['cached_tokens']:,} of {cache['prompt_tokens']:,} prompt tokens, as the "
            f"server reported them). TTFT p50: {_ms(cached_ttft)} ms mostly cached, {_ms(uncached_ttft)} ms mostly "
            "uncached.</p>"
        )


def _ms(value: float | None) -> str:
    return e(fmt(None if value is None else value * 1e3, "ms"))


def _num(value: float | None) -> str:
    return e(fmt(value))


def sweep_page(directory: Path, index: dict[str, Any]) -> Page:
    from pytps.report import html_plots as plots

    axes: dict[str, list[Any]] = index.get("axes") or {}
    page = Page(f"pytps sweep: {directory.name}")
    first_meta: dict[str, Any] = {}
    for cell in index.get("cells") or []:
        if cell.get("status") == "done" and (directory / cell["dir"] / "results.json").is_file():
            first_meta = load_saved_run(directory / cell["dir"]).meta
            break
    items = [
        ("swept", ", ".join(f"{k} = {', '.join(map(str, v))}" for k, v in axes.items())),
        ("when (UTC)", index.get("date_utc")),
        ("model", first_meta.get("model")),
        ("prompt size [tokens]", (first_meta.get("workload") or {}).get("input_tokens")),
        ("output size [tokens]", (first_meta.get("workload") or {}).get("output_tokens")),
        ("transport", first_meta.get("transport")),
        ("client host", (first_meta.get("client") or {}).get("host")),
        ("pytps version", first_meta.get("pytps_version")),
        ("stopped early", index.get("stopped")),
        ("results folder", str(directory)),
    ]
    page.add(f"<h1>pytps sweep: {e(first_meta.get('model') or directory.name)}</h1>")
    page.add(_meta_list(items))
    page.add("<h2>Sweep curve</h2>")
    page.add(
        '<p class="note">Each point a cell (labelled with its value on the swept axis): its mean decode speed '
        "per user against its aggregate output throughput. The knee (on decode speed) and the cell with the most "
        "goodput are marked (docs/metrics.md, Sweeps).</p>"
    )
    cells = index.get("cells") or []
    for a in index.get("analysis") or []:
        axis, fixed = a["axis"], a.get("fixed") or {}
        points = []
        for cell in cells:
            vals, h = cell.get("values") or {}, cell.get("headline") or {}
            if cell.get("status") != "done" or any(vals.get(k) != v for k, v in fixed.items()):
                continue
            x, y = h.get("output_throughput_tps"), h.get("decode_tps_mean")
            if x is None or y is None:
                continue
            points.append({"value": vals.get(axis), "x": x, "y": y, "goodput_rps": h.get("goodput_rps")})
        points.sort(key=lambda p: p["value"])
        where = ", ".join(f"{k}={v}" for k, v in fixed.items())
        title = f"per-user decode speed vs aggregate throughput along {axis}" + (f" ({where})" if where else "")
        best = a.get("max_goodput")
        page.add(page.plot(plots.sweep_curve(title, points, a.get("knee_decode"), best)))
        most = "-" if best is None else f"{best['goodput_rps']:.2f} req/s at {axis} {best['value']}"
        page.add(
            _meta_list(
                [
                    (
                        "knee, decode tok/s/user",
                        a.get("knee_decode") if a.get("knee_decode") is not None else "none in range",
                    ),
                    ("knee, E2E tok/s/user", a.get("knee") if a.get("knee") is not None else "none in range"),
                    ("max goodput", most),
                    (
                        f"SLO capacity ({a.get('slo_target', 0):.0%} useful)",
                        a.get("slo_capacity") if a.get("slo_capacity") is not None else "none in range",
                    ),
                ]
            )
        )
    graded = [c for c in cells if c.get("status") == "done" and (c.get("headline") or {}).get("accuracy") is not None]
    if graded and len(axes) == 1:
        axis = next(iter(axes))
        acc = sorted(
            (c["values"][axis], c["headline"]["accuracy"], *(c["headline"].get("accuracy_ci95") or [0.0, 0.0]))
            for c in graded
        )
        page.add("<h2>Accuracy against load</h2>")
        page.add(page.plot(plots.accuracy_curve(f"graded accuracy along {axis}", axis, acc)))
    cols = [
        ("p50 TTFT [ms]", "ttft_p50_s", 1e3, "ms"),
        ("p50 TPOT [ms]", "tpot_p50_s", 1e3, "ms"),
        ("mean decode [tok/s/user]", "decode_tps_mean", 1, "tok/s"),
        ("mean E2E speed [tok/s/user]", "user_tps_mean", 1, "tok/s"),
        ("output [tok/s, all users]", "output_throughput_tps", 1, "tok/s"),
        ("goodput [req/s]", "goodput_rps", 1, "req/s"),
        ("errors [%]", "error_rate", 100, "%"),
    ]
    if graded:
        cols.append(("accuracy [%]", "accuracy", 100, "%"))
    head = "".join(f"<th>{e(n)}</th>" for n in [*axes, "status", *(c[0] for c in cols)])
    rows = []
    for cell in cells:
        h = cell.get("headline") or {}
        vals = [fmt(None if h.get(k) is None else h[k] * sc, u) for _, k, sc, u in cols]
        status = cell.get("status", "") + (f": {cell['error']}" if cell.get("error") else "")
        rows.append(
            "<tr>"
            + "".join(f"<td>{e(cell['values'].get(a))}</td>" for a in axes)
            + f"<td>{e(status)}</td>"
            + "".join(f'<td class="num">{e(v)}</td>' for v in vals)
            + "</tr>"
        )
    page.add(f"<h2>Cells</h2><table><tr>{head}</tr>{''.join(rows)}</table>")
    page.add(
        '<p class="note">Each cell is a run folder of its own: <code>pytps report DIR --html</code> on it '
        "draws its distributions and timeline.</p>"
    )
    return page


def compare_page(result: dict[str, Any], curves: Callable[[str], list[tuple[str, Any]]]) -> Page:
    """The comparison (pytps.report.compare.compare's result) side by side, and overlaid CDFs; `curves(key)`
    gives each side's (label, values) of a per-request metric."""
    from pytps.report import html_plots as plots
    from pytps.report.numbers import fmt_signed

    page = Page("pytps compare")
    page.add("<h1>pytps compare</h1>")
    page.add(
        _meta_list(
            [(s["label"], f"{', '.join(s['runs'])} ({s['requests']:,} measured requests)") for s in result["sides"]]
        )
    )
    for w in result["warnings"]:
        page.add(f'<div class="warn">{e(w)}</div>')
    base = result["sides"][0]["label"]
    head = ["metric [unit]", base]
    for side in result["sides"][1:]:
        lab = side["label"]
        head += [lab, f"{lab} − {base} [95% CI]", f"{lab}/{base} − 1"]
    rows = []
    for m in result["metrics"]:
        unit, scale = m["unit"], m["scale"]
        for stat, entry in m["stats"].items():
            name = "mean" if stat == "mean" else "median"
            v0 = entry["values"][0]
            cells = [
                f"<td>{e(m['label'])} {name} [{e(unit)}]</td>",
                f'<td class="num">{e(fmt(None if v0 is None else v0 * scale, unit))}</td>',
            ]
            for value, d in zip(entry["values"][1:], entry["diffs"], strict=True):
                diff = "-" if d["diff"] is None else fmt_signed(d["diff"] * scale, unit)
                if d["ci95"] is not None:
                    lo, hi = (x * scale for x in d["ci95"])
                    diff += f" [{fmt_signed(lo, unit)}, {fmt_signed(hi, unit)}]"
                rel = "-" if d["rel"] is None else fmt_signed(d["rel"] * 100, "%") + "%"
                sig = ' class="num sig"' if d["significant"] else ' class="num"'
                cells += [
                    f'<td class="num">{e(fmt(None if value is None else value * scale, unit))}</td>',
                    f"<td{sig}>{e(diff)}{' *' if d['significant'] else ''}</td>",
                    f'<td class="num">{e(rel)}</td>',
                ]
            rows.append("<tr>" + "".join(cells) + "</tr>")
    page.add(
        "<h2>Side by side</h2><table><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in head)
        + "</tr>"
        + "".join(rows)
        + "</table>"
    )
    page.add(
        f'<p class="note">* (bold): the 95% bootstrap interval of the difference leaves out 0 '
        f"({result['resamples']:,} resamples, seed {result['seed']}; docs/compare.md).</p>"
    )
    page.add("<h2>Distributions, overlaid</h2>")
    plotted = []
    for key, title, unit, scale in (
        ("ttft_s", "TTFT", "ms", 1e3),
        ("tpot_s", "TPOT", "ms", 1e3),
        ("itl_s", "ITL", "ms", 1e3),
        ("e2e_s", "E2E", "ms", 1e3),
        ("decode_tps", "decode speed/user", "tok/s", 1.0),
    ):
        c = [(lab, v) for lab, v in curves(key) if len(v)]
        if c:
            plotted.append(page.plot(plots.cdf(title, unit, scale, c)))
    page.add(f'<div class="plots2">{"".join(plotted)}</div>')
    return page


# ---- entry points ----------------------------------------------------------------------------


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """The HTML report of a run's folder, or of a sweep's (sweep.json), to `out` (default:
    report.html inside the folder)."""
    _bokeh()  # the friendly error before any work
    d = Path(directory)
    target = Path(out) if out else d / DEFAULT_NAME
    if (d / "sweep.json").is_file() and not (d / "results.json").is_file():
        try:
            index = json.loads((d / "sweep.json").read_text())
        except ValueError as exc:
            raise ConfigError(f"{d}/sweep.json is not valid JSON: {exc}") from exc
        return _write(sweep_page(d, index), target)
    return _write(run_page(load_saved_run(d)), target)


def write_compare(result: dict[str, Any], run_dirs: list[list[str]], out: str | Path) -> Path:
    """`pytps compare … --html FILE`: run_dirs holds each side's run folders, in result's order."""
    _bokeh()
    import numpy as np

    runs = [[load_saved_run(p) for p in side] for side in run_dirs]
    labels = [s["label"] for s in result["sides"]]

    def curves(key: str) -> list[tuple[str, Any]]:
        out_: list[tuple[str, Any]] = []
        for label, side in zip(labels, runs, strict=True):
            parts = [r.itl_samples_s() if key == "itl_s" else r.values(key) for r in side]
            out_.append((label, np.concatenate(parts) if parts else np.zeros(0)))
        return out_

    return _write(compare_page(result, curves), out)
