"""The HTML report of one run (`pytps report DIR --html`, `pytps run --html`): its header, the
summary table, the distributions, the token timeline, throughput and requests in flight, latency
against length, per-turn and prefix-cache figures and the errors; read from the saved files only."""

from __future__ import annotations

import json
from typing import Any

from pytps.measure.catalogue import Metric, metric
from pytps.report import run_warnings
from pytps.report.console import table_rows
from pytps.report.html_page import Page, e, meta_list, ms, num
from pytps.report.numbers import fmt
from pytps.report.saved_run import TIMELINE_MAX_ROWS, TIMELINE_MAX_TICKS, SavedRun, timeline


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
    out = [f"<h1>pytps report: {e(meta.get('model'))}</h1>", meta_list(items)]
    envelope = run.results.get("envelope", meta.get("envelope"))
    if envelope is not None:
        out.append("<h2>Calibration envelope</h2>")
        out.append(
            '<p class="note">What this client can measure on this host (pytps calibrate); '
            "figures near its floor are not to be trusted to more than it.</p>"
        )
        out.append(meta_list(_flatten(envelope)) if isinstance(envelope, (dict, list)) else f"<p>{e(envelope)}</p>")
    warnings = run_warnings.collect(run.results)
    if warnings:
        out.append("<h2>Warnings</h2>")
        out += [f'<div class="warn">{e(w)}</div>' for w in warnings]
    return "\n".join(out)


#: The run-level table under the summary, in order (client CPU only when the run measured it).
RUN_LEVEL = (
    "output_throughput_tps",
    "steady_output_throughput_tps",
    "request_throughput_rps",
    "goodput_rps",
    "output_tokens_total",
    "requests_ok",
    "measured_window_s",
    "client_cpu_us_per_token",
)
#: The CDFs of the distributions section, in order.
CDF_METRICS = ("ttft_s", "tpot_s", "itl_s")


def _label_cell(m: Metric) -> str:
    """A table's first cell: the metric's label and unit, its description as a tooltip."""
    return f'<td title="{e(m.description)}">{e(m.heading)}</td>'


def _run_value(summary: dict[str, Any], m: Metric) -> str:
    """A run-level figure in its display unit; counts whole, thousands grouped."""
    if m.key == "requests_ok":
        return f"{summary.get('requests_ok', 0):,} / {summary.get('requests_total', 0):,}"
    if m.key == "output_tokens_total":
        return f"{summary.get(m.key, 0):,}"
    value = summary.get(m.key)
    return fmt(m.shown(value), m.unit) if isinstance(value, (int, float)) else "-"


def summary_table(summary: dict[str, Any]) -> str:
    """The console's table (report/console.table_rows: pytps's figures, then the server's own
    timings when it reported them), every figure with its unit."""
    head = "".join(f"<th>{c}</th>" for c in ("metric [unit]", "mean", "± σ", "p50", "p90", "p99", "min", "max", "n"))
    rows = []
    for m, d in table_rows(summary):
        cells = [fmt(m.shown(d.get(k)), m.unit) for k in ("mean", "stddev", "p50", "p90", "p99", "min", "max")]
        rows.append(
            f"<tr>{_label_cell(m)}"
            + "".join(f'<td class="num">{e(c)}</td>' for c in cells)
            + f'<td class="num">{d["count"]}</td></tr>'
        )

    run_rows = "".join(
        f'<tr>{_label_cell(m)}<td class="num">{e(_run_value(summary, m))}</td></tr>'
        for m in map(metric, RUN_LEVEL)
        if m.key != "client_cpu_us_per_token" or summary.get(m.key) is not None
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
    for m in map(metric, CDF_METRICS):
        values = run.itl_samples_s() if m.key == "itl_s" else run.values(m.key)
        if len(values):
            cdfs.append(page.plot(plots.cdf(m.label, m.unit, m.scale, [(m.label, values)], s.get(m.key))))
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

    _server_metrics_section(page, run, tl_fig.x_range)
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


def _server_metrics_section(page: Page, run: SavedRun, x_range: Any) -> None:
    """The server's own metrics over the run (--server-metrics): its lines, and its series on the
    run's time axis, zoomed with the timeline."""
    from pytps.report import html_plots as plots
    from pytps.report.server_metrics_lines import server_metrics_lines

    lines = server_metrics_lines(run.results)
    if not lines:
        return
    page.add("<h2>Server metrics</h2>")
    page.add("".join(f"<p>{e(line)}</p>" for line in lines))
    page.add(
        '<p class="note">Scraped from the server\'s Prometheus /metrics during the run, each scrape at the '
        "midpoint of its request and its body on the run's clock (docs/server-metrics.md). Zooming one zooms "
        "the timeline too.</p>"
    )
    figs = [fig for url, series in run.server_series() for fig in plots.server_series(url, series, x_range)]
    if figs:
        page.add('<div class="plots2">' + "".join(page.plot(f) for f in figs) + "</div>")


def _workload_sections(page: Page, run: SavedRun) -> None:
    """Latency against prompt and output length (points from the journal, the summary's bins as a
    line), and, when the run had them, the per-turn figures and the prefix cache's."""
    from pytps.report import html_plots as plots

    s = run.summary
    figs = []
    for x_key, y_key, bins_key, x_label in (
        ("prompt_tokens", "ttft_s", "ttft_by_prompt_tokens", "prompt tokens"),
        ("output_tokens", "e2e_s", "e2e_by_output_tokens", "output tokens"),
    ):
        x, y, total = run.pairs(x_key, y_key)
        if total:
            m = metric(y_key)
            drawn = "" if len(x) == total else f" ({len(x):,} of {total:,} requests drawn, evenly by index)"
            title = f"{m.label} against {x_label}{drawn}"
            fig = plots.scatter(title, x_label, m, x, y, s.get(bins_key) or [])
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
        ttft, decode = metric("ttft_s"), metric("decode_tps")
        rows = "".join(
            "<tr>"
            + "".join(
                f'<td class="num">{cell}</td>'
                for cell in (
                    t["turn"],
                    f"{t['requests']:,}",
                    e(fmt(ttft.shown(t.get("ttft_p50_s")), ttft.unit)),
                    e(fmt(ttft.shown(t.get("ttft_mean_s")), ttft.unit)),
                    e(fmt(decode.shown(t.get("decode_tps_p50")), decode.unit)),
                    num(t.get("prompt_tokens_mean")),
                    num(t.get("cached_tokens_mean")),
                )
            )
            + "</tr>"
            for t in turns
        )
        page.add(
            "<table><tr>"
            + "".join(
                f"<th>{e(h)}</th>"
                for h in (
                    "turn",
                    "requests",
                    ttft.stat_heading("p50"),
                    ttft.stat_heading("mean"),
                    decode.stat_heading("p50"),
                    "prompt tokens, mean",
                    "cached tokens, mean",
                )
            )
            + f"</tr>{rows}</table>"
        )
    cache = s.get("cache") or {}
    if cache.get("hit_rate") is not None:
        hit = cache["hit_rate"]
        cached_ttft = (cache.get("ttft_mostly_cached_s") or {}).get("p50")
        uncached_ttft = (cache.get("ttft_mostly_uncached_s") or {}).get("p50")
        page.add("<h2>Prefix cache</h2>")
        page.add(
            f"<p>Hit rate {hit:.1%} ({cache['cached_tokens']:,} of {cache['prompt_tokens']:,} prompt tokens, as the "
            f"server reported them). TTFT p50: {ms(cached_ttft)} ms mostly cached, {ms(uncached_ttft)} ms mostly "
            "uncached.</p>"
        )


def _grading_section(page: Page, run: SavedRun) -> None:
    """Graded answers: the figures, and E2E of correct and wrong answers as two CDFs."""
    import numpy as np

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
        e2e = metric("e2e_s")
        page.add(page.plot(plots.cdf("E2E of correct and wrong answers", e2e.unit, e2e.scale, curves)))
