"""What `pytps calibrate` shows: the console tables (coloured as a heat map against the
thresholds) and the PNG/SVG heat map of p99 stamp delay over rate x concurrency."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError


def _n(v: Any, fmt: str) -> str:
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def heat_style(value_us: float | None, limit_us: float) -> str:
    """Green well inside the threshold, yellow near it, red beyond."""
    if value_us is None or not math.isfinite(value_us):
        return "dim"
    if value_us <= limit_us / 4:
        return "green"
    return "yellow" if value_us <= limit_us else "bold red"


def cell_rows(data: dict[str, Any]) -> list[list[str]]:
    """The detailed table's rows (plain text; the console colours them)."""
    rows = []
    for c in data["cells"]:
        f = c["figures"]
        kernel = ""
        if f.get("kernel_delay_p99_us") is not None:
            kernel = f"{_n(f['kernel_delay_p50_us'], '.0f')}/{_n(f['kernel_delay_p99_us'], '.0f')}"
        rows.append([
            c["client"], f"{c['rate_tps']:,.0f}", str(c["tokens_per_event"]), f"{c['events_per_s']:,.0f}",
            str(c["concurrency"]),
            "/".join(_n(f[k], ".0f") for k in ("stamp_delay_p50_us", "stamp_delay_p99_us", "stamp_delay_max_us")),
            kernel,
            f"{_n(f['ttft_error_mean_ms'], '.3f')} ({_n(f['ttft_error_signed_ms'], '+.3f')})",
            _n(f["tpot_error_pct"], ".3f"),
            _n(f["cpu_us_per_token"], ".2f"), _n(f["read_floor_us_per_event"], ".2f"),
            "yes" if f["kept_up"] else "NO",
            f"{_n(f['emulator_late_p50_us'], '.0f')}/{_n(f['emulator_late_p99_us'], '.0f')}",
            verdict(f),
        ])  # fmt: skip
    return rows


def verdict(f: dict[str, Any]) -> str:
    """pass; FAIL and the flags that failed; or "emulator late" (flags met, rate not tested)."""
    if f["passed"]:
        return "pass"
    failed = [k for k, ok in f["flags"].items() if not ok]
    return "FAIL " + ", ".join(failed) if failed else "emulator late"


HEADERS = [
    "client", "tok/s/stream", "tok/ev", "ev/s", "conc", "delay µs p50/p99/max", "kernel µs", "TTFT err ms (signed)",
    "TPOT %", "CPU µs/tok", "floor µs/ev", "kept up", "emu late µs p50/p99", "verdict",
]  # fmt: skip


def print_report(data: dict[str, Any], console: Any = None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # Wide enough for the table when the output is not a terminal (a log, a README); a client
    # named module:function is no emoji code.
    console = console or Console(width=max(Console().width, 180), emoji=False)
    limit_us = data["thresholds"]["stamp_p99_ms"] * 1e3
    t = Table(title="pytps calibrate: each client's error against the emulator's truth", title_justify="left")
    for h in HEADERS:
        t.add_column(
            h, justify="left" if h in ("client", "verdict") else "right", no_wrap=h == "client", overflow="fold"
        )
    for c, row in zip(data["cells"], cell_rows(data), strict=True):
        style = heat_style(c["figures"]["stamp_delay_p99_us"], limit_us)
        row[0] = escape(row[0])
        row[5] = f"[{style}]{row[5]}[/]"
        row[-1] = f"[green]{row[-1]}[/]" if c["figures"]["passed"] else f"[red]{row[-1]}[/]"
        t.add_row(*row)
    console.print(t)
    # The envelope per client: p99 stamp delay over (events/s per stream) x concurrency.
    for name in data["clients"]:
        cells = [c for c in data["cells"] if c["client"] == name]
        if not cells:
            continue
        concs = sorted({c["concurrency"] for c in cells})
        console.print(f"{escape(name)}: p99 stamp delay µs over events/s per stream x concurrency (✓ passed)")
        g = Table()
        g.add_column("events/s/stream (tok/ev)", justify="right")
        for n in concs:
            g.add_column(f"x{n}", justify="right")
        for ev, tpe in sorted({(c["events_per_s"], c["tokens_per_event"]) for c in cells}):
            by_n = {c["concurrency"]: c for c in cells if c["events_per_s"] == ev and c["tokens_per_event"] == tpe}
            row = [f"{ev:,.0f} ({tpe})"]
            for n in concs:
                c = by_n.get(n)
                if c is None:
                    row.append("[dim]–[/]")
                    continue
                f = c["figures"]
                mark = "✓" if f["passed"] else "✗"
                row.append(
                    f"[{heat_style(f['stamp_delay_p99_us'], limit_us)}]{_n(f['stamp_delay_p99_us'], '.0f')} {mark}[/]"
                )
            g.add_row(*row)
        console.print(g)
    for s in data.get("stopped", []):
        console.print(
            f"[yellow]{escape(s['client'])}: row {s['rate_tps']:,.0f} tok/s x {s['tokens_per_event']} tok/ev stopped "
            f"at concurrency {s['concurrency']}: {s['why']}[/]"
        )
    for s in data.get("skipped", []):
        console.print(f"[yellow]skipped {escape(s['client'])}: {escape(s['why'])}[/]")
    console.print(
        "[dim]Delay = the client's stamp of an event - the emulator's stamp when its write() of it returned; "
        "signed: a loopback read can complete before the write returns.[/]"
    )
    console.print(f"[dim]{data['lower_bound']}[/]")


def write_heatmap(data: dict[str, Any], path: str | Path) -> Path:
    """p99 stamp delay over (events/s per stream, concurrency), one panel per client (PNG or SVG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install matplotlib") from None
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ConfigError(f"--plot {path}: name a .png or .svg file")
    names = [n for n in data["clients"] if any(c["client"] == n for c in data["cells"])]
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.5 * max(1, len(names)), 4), squeeze=False)
    limit_us = data["thresholds"]["stamp_p99_ms"] * 1e3
    for ax, name in zip(axes[0], names, strict=False):
        cells = [c for c in data["cells"] if c["client"] == name]
        rows = sorted({(c["events_per_s"], c["tokens_per_event"]) for c in cells})
        concs = sorted({c["concurrency"] for c in cells})
        grid = [[math.nan] * len(concs) for _ in rows]
        for c in cells:
            v = c["figures"]["stamp_delay_p99_us"]
            grid[rows.index((c["events_per_s"], c["tokens_per_event"]))][concs.index(c["concurrency"])] = (
                math.nan if v is None else v
            )
        im = ax.imshow(grid, cmap="RdYlGn_r", vmin=0, vmax=2 * limit_us, aspect="auto", origin="lower")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if math.isfinite(v):
                    ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(concs)), [str(n) for n in concs])
        ax.set_yticks(range(len(rows)), [f"{e:,.0f} ({t})" for e, t in rows])
        ax.set_xlabel("concurrency")
        ax.set_ylabel("events/s per stream (tokens/event)")
        ax.set_title(f"{name}: p99 stamp delay µs")
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
