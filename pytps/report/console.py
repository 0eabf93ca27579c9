"""Console output: the summary table of a saved run (the live progress bar is pytps.cli.progress)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pytps.measure import catalogue
from pytps.measure.catalogue import Metric
from pytps.report import run_warnings
from pytps.report.numbers import fmt, sparkline
from pytps.report.terminal import SafeConsole

# The table's rows, in order: the run's own distributions, then the server's timings when it
# reported them (labels, units and scales: pytps/measure/catalogue.py).
ROWS = catalogue.DISTRIBUTIONS
SERVER_ROWS = catalogue.SERVER


# The figures of the line under the table, in order.
RUN_LINE = ("output_throughput_tps", "steady_output_throughput_tps", "request_throughput_rps")

Row = tuple[Metric, dict[str, Any]]


def _fmt(value: float | None, m: Metric) -> str:
    return fmt(m.shown(value), m.unit)


def _present(stats: dict[str, Any], spec: tuple[Metric, ...]) -> list[Row]:
    """(metric, its distribution) of each metric of `spec` with samples in `stats`."""
    return [(m, stats[m.key]) for m in spec if (stats.get(m.key) or {}).get("count")]


def summary_rows(summary: dict[str, Any]) -> list[Row]:
    """(metric, distribution) of each distribution the run has, in report order. TTFB is shown for
    runs of whole bodies only: a stream's first byte says little beside its TTFT."""
    rows = _present(summary, ROWS)
    if summary.get("streamed") is not False:
        rows = [(m, d) for m, d in rows if m.key != "ttfb_s"]
    return rows


#: Why a run of whole JSON bodies has no TTFT, TPOT or ITL rows (docs/metrics.md, "Whole bodies").
NOT_STREAMED = (
    "no TTFT, TPOT or ITL: the responses were whole JSON bodies (--no-stream, embeddings or rerank), "
    "so no token arrived before the last byte; TTFB and E2E time them"
)


def body_line(summary: dict[str, Any]) -> str | None:
    """The input side of an embeddings or rerank run: inputs/s, input tokens/s, the vector length."""
    if not summary.get("inputs_total"):
        return None
    inputs, tokens, dim = (
        catalogue.metric(k) for k in ("input_throughput_per_s", "input_token_throughput_tps", "embedding_dim")
    )
    parts = [
        f"{fmt(summary.get(inputs.key), inputs.unit)} {inputs.unit} ({summary['inputs_total']:,} inputs)",
        f"{tokens.label} {fmt(summary.get(tokens.key), tokens.unit)} {tokens.unit} "
        f"({summary.get('input_tokens_total', 0):,} tokens)",
    ]
    if summary.get("embedding_dims"):
        shown = summary.get(dim.key) if summary.get(dim.key) is not None else summary["embedding_dims"]
        parts.append(f"{dim.label} {shown}")
    return " · ".join(parts)


def server_rows(summary: dict[str, Any]) -> list[Row]:
    """(metric, distribution) of the server's own timings, when it reported them."""
    return _present(summary.get("server_timings") or {}, SERVER_ROWS)


def table_rows(summary: dict[str, Any]) -> list[Row]:
    """Every row of the summary table: pytps's own figures, then the server's when it reported
    them. The console, the HTML report and the Markdown/CSV tables all print these."""
    return summary_rows(summary) + server_rows(summary)


def throughput_sparkline(summary: dict[str, Any], width: int = 60) -> str | None:
    """Output tokens per second over the run as one line of blocks, or None for a run under 2 s.

    The last second is usually partial (the run ended inside it): it is left out, so a drain does
    not look like a collapse."""
    series = summary.get("time_series") or []
    tokens = [float(p.get("output_tokens", 0)) for p in series]
    if len(tokens) > 2:
        tokens = tokens[:-1]
    if len(tokens) < 2:
        return None
    return (
        f"output tok/s per second {sparkline(tokens, width)} (max {fmt(max(tokens), 'tok/s')} tok/s, {len(series)} s)"
    )


def render(results: dict[str, Any], console: Console | None = None) -> None:
    console = console or SafeConsole()
    meta = results.get("metadata", {})
    s = results.get("summary") or {}
    load = meta.get("load", {})
    ep = meta.get("endpoint", {})
    tls = meta.get("tls") or {}
    transport = str(meta.get("transport"))
    if tls:
        # Which TLS stack measured matters when comparing runs (httpx: Python's ssl).
        transport += (
            f" over TLS ({tls.get('library') or 'Python ssl'}"
            + ("" if tls.get("verify", True) else ", unverified")
            + ")"
        )
    console.print(
        # Escaped: a model name or host may hold brackets, which rich would read as markup.
        f"[bold]{escape(str(meta.get('model')))}[/] via {escape(str(meta.get('api')))} at "
        + escape(
            f"{ep.get('host')}:{ep.get('port')} · {load.get('mode')} "
            f"{load.get('concurrency') or load.get('rate_rps') or (meta.get('workload') or {}).get('kind')} · "
            f"{transport} · {meta.get('date_utc')}"
        )
    )
    # Light borders, no edges, one space and a column rule between columns: the table fits an
    # 80-column terminal (rich's width when stdout is a file) with every label on one line.
    table = Table(
        show_header=True,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
        pad_edge=False,
    )
    # The label never wraps (catalogue.LABEL_MAX keeps it short); numbers give way first.
    table.add_column("metric", justify="left", no_wrap=True)
    for col in ("mean ± σ", "p50", "p90", "p99", "min … max", "n"):
        table.add_column(col, justify="right")
    for i, (m, d) in enumerate(table_rows(s)):
        if i == len(summary_rows(s)) and i:
            table.add_section()
        table.add_row(
            # "[ms]" is rich markup to rich, which would drop it and leave "TTFT" without its unit.
            escape(m.heading),
            f"{_fmt(d['mean'], m)} ± {_fmt(d['stddev'], m)}",
            _fmt(d["p50"], m),
            _fmt(d["p90"], m),
            _fmt(d["p99"], m),
            f"{_fmt(d['min'], m)} … {_fmt(d['max'], m)}",
            str(d["count"]),
        )
    console.print(table)
    st = s.get("server_timings")
    if st:
        console.print(
            f"server timings: {st['requests']} requests reported their own ({escape(str(st['source']))}); "
            "TTFT − server prompt time is network, queueing, HTTP and the client",
            style="dim",
        )
    from pytps.report.server_metrics_lines import server_metrics_lines

    for line in server_metrics_lines(results):
        console.print(escape(line))

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    if s.get("streamed") is False:
        console.print(NOT_STREAMED, style="dim")
    inputs_line = body_line(s)

    # The run-level line: labels and units from the catalogue, the sentence around them here.
    out, steady, req = (catalogue.metric(k) for k in RUN_LINE)
    good, good_tokens = catalogue.metric("goodput_rps"), catalogue.metric("goodput_tps")

    output = (
        f"{out.label} {num(s.get(out.key), ',.1f')} {out.unit} (all users) · "
        f"steady {num(s.get(steady.key), ',.1f')} {steady.unit} · "
    )
    console.print(
        (f"{inputs_line} · " if inputs_line else output)
        + f"{num(s.get(req.key), ',.2f')} {req.unit} · "
        + ("" if inputs_line else f"{s.get('output_tokens_total', 0):,} tokens ({s.get('token_source')}) · ")
        + f"errors {s.get('requests_total', 0) - s.get('requests_ok', 0)}/{s.get('requests_total', 0)}"
        + (escape(f" {s.get('errors')}") if s.get("errors") else "")
        + (f" · {s['requests_retried']} sent again on a new connection" if s.get("requests_retried") else "")
    )
    slo = meta.get("slo") or {}
    if s.get("useful_share") is not None and (slo.get("per_request_s") or slo.get("validation")):
        console.print(
            f"{good.label} {num(s.get(good.key), ',.2f')} useful {good.unit} · "
            f"{num(s.get(good_tokens.key), ',.1f')} useful {good_tokens.unit} · {s['useful_share']:.1%} useful"
            + (escape(f" (not useful: {s['not_useful']})") if s.get("not_useful") else "")
        )
    if s.get("slo_run"):
        checks = " · ".join(
            f"{c['slo']} {num(c['value_s'], '.4g')} s ≤ {c['limit_s']:g} s {'met' if c['met'] else 'MISSED'}"
            for c in s["slo_run"]["checks"]
        )
        console.print(f"run SLOs {'met' if s['slo_run']['met'] else 'NOT met'}: {checks}")
    spark = throughput_sparkline(s)
    if spark:
        console.print(spark)
    cost = s.get("cost")
    if cost:
        cur = cost["currency"]
        console.print(
            f"cost {num(cost['total'], ',.6g')} {cur} · {num(cost['per_request'], ',.6g')} {cur}/request · "
            f"{num(cost['per_million_output_tokens'], ',.4g')} {cur}/M output tokens · "
            f"{num(cost['per_useful_response'], ',.6g')} {cur}/useful response"
        )
    from pytps.report.grading_lines import grading_lines

    for line in grading_lines(results):
        console.print(escape(line))
    cpu = meta.get("client_cpu") or {}
    if s.get("client_cpu_us_per_token") is not None:
        engine = cpu.get("engine_thread_s")
        console.print(
            f"client CPU {s['client_cpu_us_per_token']:.2f} µs/token · event loop {cpu.get('loop_thread_s', 0):.2f} s"
            + (f" · engine thread {engine:.2f} s" if engine is not None else "")
            + f" in {cpu.get('wall_s', 0):.2f} s",
            style="dim",
        )
    from pytps.report.workload_lines import workload_lines

    for line in workload_lines(results):
        console.print(escape(line))
    for w in run_warnings.collect(results):
        console.print(f"[yellow]Warning:[/] {escape(w)}")
