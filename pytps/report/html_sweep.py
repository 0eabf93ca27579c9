"""The HTML page of a sweep (`pytps report SWEEP_DIR --html`, `pytps sweep --html`): what was
swept, the curve of per-user decode speed against aggregate throughput per second axis value, with
the knee and the most goodput marked, and the cells' table; read from sweep.json and its cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytps.report.html_page import Page, e, meta_list
from pytps.report.numbers import fmt
from pytps.report.saved_run import load_saved_run


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
    page.add(meta_list(items))
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
            meta_list(
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
    cols = [
        ("p50 TTFT [ms]", "ttft_p50_s", 1e3, "ms"),
        ("p50 TPOT [ms]", "tpot_p50_s", 1e3, "ms"),
        ("mean decode [tok/s/user]", "decode_tps_mean", 1, "tok/s"),
        ("mean E2E speed [tok/s/user]", "user_tps_mean", 1, "tok/s"),
        ("output [tok/s, all users]", "output_throughput_tps", 1, "tok/s"),
        ("goodput [req/s]", "goodput_rps", 1, "req/s"),
        ("errors [%]", "error_rate", 100, "%"),
    ]
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
