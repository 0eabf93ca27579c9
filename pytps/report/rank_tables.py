"""`pytps rank`'s tables (docs/rank.md): one row per endpoint, best rank first: rank group,
endpoint, model, accuracy [95% CI], the objective [95% CI], TTFT p50, output speed per user p50,
cost per correct response, errors; then the verdict's lines. The console and Markdown show the
same rows; with rounds, each endpoint's rank per round and its median over the rounds."""

from __future__ import annotations

from typing import Any

from pytps.measure.catalogue import figure_heading
from pytps.report.rank import fmt_value


def _interval(value: float | None, ci: list[float] | None, unit: str) -> str:
    if value is None:
        return "-"
    text = fmt_value(value, unit)
    if ci is not None:
        if unit == "s":
            text += f" [{ci[0] * 1e3:.1f}, {ci[1] * 1e3:.1f}]"
        elif unit == "":
            text = f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
        else:
            text += f" [{ci[0]:.4g}, {ci[1]:.4g}]"
    return text


def headers(v: dict[str, Any]) -> list[str]:
    obj = v["objective"]
    unit = {"s": "ms", "tok/s": "tok/s", "currency": "per correct"}[obj["unit"]]
    return [
        "rank",
        "endpoint",
        "model",
        "accuracy [95% CI]",
        f"{obj['label']} [{unit}, 95% CI]",
        figure_heading("ttft_p50"),
        figure_heading("user_tps_p50"),
        "cost per correct",
        "errors",
    ]


def rows(v: dict[str, Any]) -> list[list[str]]:
    unit = v["objective"]["unit"]
    out = []
    for e in v["endpoints"]:
        acc = "-" if e["accuracy"] is None else _interval(e["accuracy"], e["accuracy_ci95"], "")
        out.append([
            str(e["rank"]) if e["rank"] is not None else "not eligible",
            e["name"] + (" (Pareto)" if e.get("pareto") else ""),
            str(e["model"] or "-"),
            acc,
            _interval(e["objective"], e["objective_ci95"], unit),
            "-" if e["ttft_p50_s"] is None else f"{e['ttft_p50_s'] * 1e3:.1f}",
            "-" if e["user_tps_p50"] is None else f"{e['user_tps_p50']:.1f}",
            "-" if e["cost_per_correct"] is None else f"{e['cost_per_correct']:.4g}",
            f"{e['errors']}/{e['requests']}",
        ])  # fmt: skip
    return out


def rounds_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Each endpoint's rank per round, and its objective's median over the rounds [95% CI]."""
    rounds = data["rounds"]
    unit = rounds[-1]["verdict"]["objective"]["unit"]
    head = ["endpoint", *(f"round {r['round']}" for r in rounds), "median [95% CI]"]
    body = []
    for name, row in (data.get("over_rounds") or {}).items():
        ranks = ["-" if r is None else str(r) for r in row["rank"]]
        body.append([name, *ranks, _interval(row["median"], row["median_ci95"], unit)])
    return head, body


def markdown(data: dict[str, Any]) -> str:
    """The rank as Markdown, for a pull request or a post."""
    v = data["rounds"][-1]["verdict"]

    def table(head: list[str], body: list[list[str]]) -> list[str]:
        esc = [[c.replace("|", "\\|") for c in r] for r in [head, *body]]
        body_lines = ["| " + " | ".join(r) + " |" for r in esc[1:]]
        return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(head), *body_lines]

    lines = [f"## pytps rank: {v['objective']['label']}", ""]
    lines.append(
        f"{v['items']} items sent to every endpoint ({data['interleave']}); ranks share a number where the "
        f"difference's paired bootstrap 95% interval ({v['resamples']:,} resamples) holds 0."
    )
    lines += ["", *table(headers(v), rows(v)), ""]
    lines += [f"- {line}" for line in v["lines"]]
    if len(data["rounds"]) > 1:
        lines += ["", "### Over the rounds", "", *table(*rounds_rows(data))]
    return "\n".join(lines) + "\n"


def render(data: dict[str, Any]) -> None:
    """The console table and the verdict's lines."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    v = data["rounds"][-1]["verdict"]
    console = Console()
    table = Table(show_header=True, header_style="bold", title=escape(f"pytps rank: {v['objective']['label']}"))
    for k, h in enumerate(headers(v)):
        table.add_column(escape(h), justify="left" if k in (1, 2) else "right")
    for r in rows(v):
        table.add_row(*(escape(c) for c in r))
    console.print(table)
    for line in v["lines"]:
        console.print(escape(line))
    if len(data["rounds"]) > 1:
        head, body = rounds_rows(data)
        t = Table(show_header=True, header_style="bold", title="rank per round")
        for h in head:
            t.add_column(escape(h), justify="right")
        for r in body:
            t.add_row(*(escape(c) for c in r))
        console.print(t)
    console.print(
        f"{v['items']} paired items, {data['interleave']}; a shared rank: no significant difference "
        f"(paired bootstrap, {v['resamples']:,} resamples)",
        style="dim",
        markup=False,
    )
