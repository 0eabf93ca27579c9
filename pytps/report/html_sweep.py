"""The HTML page of a sweep (`pytps report SWEEP_DIR --html`, `pytps sweep --html`): what was
swept, the curve of per-user decode speed against aggregate throughput per second axis value, with
the knee and the most goodput marked, and the cells' table; read from sweep.json and its cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytps.measure.catalogue import metric
from pytps.report.html_page import Page, e, meta_list
from pytps.report.numbers import fmt
from pytps.report.saved_run import load_saved_run
from pytps.report.sweep_curve import optional_columns
from pytps.report.verdicts import CELL_CLASSES, PROBE_CLASSES
from pytps.results.files import RESULTS
from pytps.sweep.cells import headline_metric, streamed, table
from pytps.sweep.search import capacity_line
from pytps.sweep.verdict import describe_check


def sweep_page(directory: Path, index: dict[str, Any]) -> Page:
    from pytps.report import html_plots as plots

    axes: dict[str, list[Any]] = index.get("axes") or {}
    page = Page(f"pytps sweep: {directory.name}")
    first_meta: dict[str, Any] = {}
    for cell in index.get("cells") or []:
        if cell.get("status") == "done" and (directory / cell["dir"] / RESULTS).is_file():
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
    cells = index.get("cells") or []
    # Without streamed tokens (embeddings, rerank, --no-stream) the curve is latency against throughput.
    tokens_streamed = streamed(cells)
    x_name, y_name = ("output_throughput_tps", "decode_tps_mean")
    if not tokens_streamed:
        x_name, y_name = ("request_throughput_rps", "e2e_p50_s")
    page.add(
        '<p class="note">Each point a cell (labelled with its value on the swept axis): its mean decode speed '
        "per user against its aggregate output throughput. The knee (on decode speed) and the cell with the most "
        "goodput are marked (docs/metrics.md, Sweeps).</p>"
        if tokens_streamed
        else '<p class="note">Each point a cell (labelled with its value on the swept axis): its median E2E '
        "against its request throughput: the responses were whole bodies, so no decode speed was timed. "
        "The cell with the most goodput is marked (docs/metrics.md, Sweeps).</p>"
    )
    for a in index.get("analysis") or []:
        axis, fixed = a["axis"], a.get("fixed") or {}
        points = []
        for cell in cells:
            vals, h = cell.get("values") or {}, cell.get("headline") or {}
            if cell.get("status") != "done" or any(vals.get(k) != v for k, v in fixed.items()):
                continue
            x, y = h.get(x_name), h.get(y_name)
            if x is None or y is None:
                continue
            points.append({"value": vals.get(axis), "x": x, "y": y, "goodput_rps": h.get("goodput_rps")})
        points.sort(key=lambda p: p["value"])
        where = ", ".join(f"{k}={v}" for k, v in fixed.items())
        title = (
            ("per-user decode speed vs aggregate throughput" if tokens_streamed else "E2E vs request throughput")
            + f" along {axis}"
            + (f" ({where})" if where else "")
        )
        best = a.get("max_goodput")
        page.add(page.plot(plots.sweep_curve(title, points, a.get("knee_decode"), best, x_name, y_name)))
        most = "-" if best is None else f"{best['goodput_rps']:.2f} req/s at {axis} {best['value']}"
        page.add(
            meta_list(
                [
                    (f"knee, on {metric('decode_tps').label}", _in_range(a.get("knee_decode"))),
                    (f"knee, on {metric('user_tps').label}", _in_range(a.get("knee"))),
                    ("max goodput", most),
                    (
                        f"SLO capacity ({a.get('slo_target', 0):.0%} useful)",
                        _in_range(a.get("slo_capacity")),
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
    search = index.get("search")
    if search:
        page.add("<h2>Capacity search</h2>")
        page.add(f"<p><b>{e(capacity_line(search))}</b></p>")
        page.add(
            '<p class="note">Each probe a whole run at one load, numbered in the order probed: requests finished '
            "per second against the load. Below capacity they keep up; past it they flatten at the capacity. The "
            "shaded band is the answer's bracket (docs/metrics.md, Capacity search).</p>"
        )
        page.add(page.plot(plots.search_probes(search["axis"], search.get("probes") or [], search["capacity"])))
        probe_rows = []
        for i, probe in enumerate(search.get("probes") or [], start=1):
            load = f"{probe['load']:.4g}"
            cls = PROBE_CLASSES.get(str(probe["status"]), "")
            probe_rows.append(
                f'<tr class="{cls}"><td>{i}</td><td class="num">{e(load)}</td>'
                f'<td class="{cls}">{e(probe["status"])}</td>'
                f"<td>{probe['runs']}</td><td>{e(describe_check(probe.get('deciding')))}</td></tr>"
            )
        head = "<tr><th>probe</th><th>load</th><th>verdict</th><th>runs</th><th>deciding check</th></tr>"
        page.add(f"<table>{head}{''.join(probe_rows)}</table>")
    cols = [(name, *headline_metric(name)) for name in table(cells)]
    if graded:
        cols.append(("accuracy", metric("accuracy").heading, metric("accuracy")))
    cols += optional_columns(cells)
    head = "".join(f"<th>{e(n)}</th>" for n in [*axes, "status", *(heading for _, heading, _ in cols)])
    rows = []
    for cell in cells:
        h = cell.get("headline") or {}
        vals = [fmt(m.shown(h.get(name)), m.unit) for name, _, m in cols]
        status = cell.get("status", "") + (f": {cell['error']}" if cell.get("error") else "")
        rows.append(
            "<tr>"
            + "".join(f"<td>{e(cell['values'].get(a))}</td>" for a in axes)
            # A failed cell gets the regression's colour, as a failed probe does; a skipped one a note's.
            + f'<td class="{CELL_CLASSES.get(str(cell.get("status")), "")}">{e(status)}</td>'
            + "".join(f'<td class="num">{e(v)}</td>' for v in vals)
            + "</tr>"
        )
    page.add(f"<h2>Cells</h2><table><tr>{head}</tr>{''.join(rows)}</table>")
    page.add(
        '<p class="note">Each cell is a run folder of its own: <code>pytps report DIR --html</code> on it '
        "draws its distributions and timeline.</p>"
    )
    return page


def _in_range(value: Any) -> Any:
    return "none in range" if value is None else value
