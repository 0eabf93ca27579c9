"""Console output: a live progress bar while running, and the summary table at the end."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..runner import Progress as RunProgress
from . import run_warnings

# (summary key, label, scale to display unit, unit)
ROWS = (
    ("ttft_s", "TTFT", 1e3, "ms"),
    ("ttfat_s", "TTFAT (answer)", 1e3, "ms"),
    ("tpot_s", "TPOT", 1e3, "ms"),
    ("itl_s", "ITL", 1e3, "ms"),
    ("e2e_s", "E2E", 1e3, "ms"),
    ("e2e_500_s", "E2E for 500 tokens", 1e3, "ms"),
    ("decode_tps", "decode tok/s/user", 1.0, "tok/s"),
    ("user_tps", "output tok/s/user (incl. TTFT)", 1.0, "tok/s"),
    ("ttft_sched_s", "TTFT from schedule", 1e3, "ms"),
    ("e2e_sched_s", "E2E from schedule", 1e3, "ms"),
    ("schedule_lag_s", "schedule lag", 1e3, "ms"),
    ("kernel_read_lag_s", "kernel→stamp lag", 1e6, "µs"),
)


class RichProgress(RunProgress):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._bar: Progress | None = None
        self._task: Any = None

    def start(self, total: int | None, duration_s: float | None) -> None:
        self._bar = Progress(
            TextColumn("[bold]pytps run"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("run", total=total, status="")

    def update(self, done: int, in_flight: int, tokens: int, errors: int, elapsed_s: float) -> None:
        if self._bar is None:
            return
        tps = tokens / elapsed_s if elapsed_s > 0 else 0.0
        self._bar.update(self._task, completed=done, status=f"in flight {in_flight}  {tps:,.0f} tok/s  errors {errors}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _fmt(value: float | None, scale: float) -> str:
    if value is None:
        return "-"
    v = value * scale
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def render(results: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
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
        f"[bold]{meta.get('model')}[/] via {meta.get('api')} at {ep.get('host')}:{ep.get('port')} · "
        f"{load.get('mode')} {load.get('concurrency') or load.get('rate_rps')} · {transport} · "
        f"{meta.get('date_utc')}"
    )
    table = Table(show_header=True, header_style="bold")
    for col in ("metric", "mean ± σ", "p50", "p90", "p99", "min … max", "n"):
        table.add_column(col, justify="right" if col != "metric" else "left")
    for key, label, scale, unit in ROWS:
        d = s.get(key)
        if not d or not d.get("count"):
            continue
        table.add_row(
            f"{label} [{unit}]",
            f"{_fmt(d['mean'], scale)} ± {_fmt(d['stddev'], scale)}",
            _fmt(d["p50"], scale),
            _fmt(d["p90"], scale),
            _fmt(d["p99"], scale),
            f"{_fmt(d['min'], scale)} … {_fmt(d['max'], scale)}",
            str(d["count"]),
        )
    console.print(table)

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    console.print(
        f"output throughput {num(s.get('output_throughput_tps'), ',.1f')} tok/s (all users) · "
        f"steady {num(s.get('steady_output_throughput_tps'), ',.1f')} tok/s · "
        f"{num(s.get('request_throughput_rps'), ',.2f')} req/s · "
        f"{s.get('output_tokens_total', 0):,} tokens ({s.get('token_source')}) · "
        f"errors {s.get('requests_total', 0) - s.get('requests_ok', 0)}/{s.get('requests_total', 0)}"
        + (f" {s.get('errors')}" if s.get("errors") else "")
        + (f" · {s['requests_retried']} sent again on a new connection" if s.get("requests_retried") else "")
    )
    slo = meta.get("slo") or {}
    if s.get("useful_share") is not None and (slo.get("per_request_s") or slo.get("validation")):
        console.print(
            f"goodput {num(s.get('goodput_rps'), ',.2f')} useful req/s · {num(s.get('goodput_tps'), ',.1f')} useful "
            f"tok/s · {s['useful_share']:.1%} useful"
            + (f" (not useful: {s['not_useful']})" if s.get("not_useful") else "")
        )
    if s.get("slo_run"):
        checks = " · ".join(
            f"{c['slo']} {num(c['value_s'], '.4g')} s ≤ {c['limit_s']:g} s {'met' if c['met'] else 'MISSED'}"
            for c in s["slo_run"]["checks"]
        )
        console.print(f"run SLOs {'met' if s['slo_run']['met'] else 'NOT met'}: {checks}")
    cost = s.get("cost")
    if cost:
        cur = cost["currency"]
        console.print(
            f"cost {num(cost['total'], ',.6g')} {cur} · {num(cost['per_request'], ',.6g')} {cur}/request · "
            f"{num(cost['per_million_output_tokens'], ',.4g')} {cur}/M output tokens · "
            f"{num(cost['per_useful_response'], ',.6g')} {cur}/useful response"
        )
    cpu = meta.get("client_cpu") or {}
    if s.get("client_cpu_us_per_token") is not None:
        engine = cpu.get("engine_thread_s")
        console.print(
            f"client CPU {s['client_cpu_us_per_token']:.2f} µs/token · event loop {cpu.get('loop_thread_s', 0):.2f} s"
            + (f" · engine thread {engine:.2f} s" if engine is not None else "")
            + f" in {cpu.get('wall_s', 0):.2f} s",
            style="dim",
        )
    for w in run_warnings.collect(results):
        console.print(f"[yellow]Warning:[/] {w}")
