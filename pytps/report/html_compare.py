"""The HTML page of `pytps compare … --html FILE`: the comparison's table side by side, its
warnings, and each per-request metric's CDFs overlaid, one curve per side."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytps.measure.catalogue import metric
from pytps.report.html_page import Page, bokeh_module, e, meta_list, write_page
from pytps.report.numbers import fmt
from pytps.report.saved_run import load_saved_run
from pytps.report.verdicts import change_class

#: The per-request metrics whose CDFs are overlaid, one curve per side.
CDF_METRICS = ("ttft_s", "tpot_s", "itl_s", "e2e_s", "decode_tps")


def compare_page(result: dict[str, Any], curves: Callable[[str], list[tuple[str, Any]]]) -> Page:
    """The comparison (pytps.report.compare.compare's result) side by side, and overlaid CDFs; `curves(key)`
    gives each side's (label, values) of a per-request metric."""
    from pytps.report import html_plots as plots
    from pytps.report.numbers import fmt_signed

    page = Page("pytps compare")
    page.add("<h1>pytps compare</h1>")
    page.add(
        meta_list(
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
                # The trend page's colours: a significant change for the worse is a regression's red.
                cls = change_class(d["rel"], bool(d["significant"]), m.get("better"))
                mark = f" {cls}" if cls in ("regression", "improvement") else ""
                sig = f' class="num sig{mark}"' if d["significant"] else ' class="num"'
                cells += [
                    f'<td class="num">{e(fmt(None if value is None else value * scale, unit))}</td>',
                    f"<td{sig}>{e(diff)}{' *' if d['significant'] else ''}</td>",
                    f'<td class="num{mark if d["significant"] else ""}">{e(rel)}</td>',
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
        f"({result['resamples']:,} resamples, seed {result['seed']}; docs/compare.md); in "
        '<span class="regression">red</span> when that is worse, in <span class="improvement">green</span> '
        "when better (the history page's colours).</p>"
    )
    page.add("<h2>Distributions, overlaid</h2>")
    plotted = []
    for m in map(metric, CDF_METRICS):
        c = [(lab, v) for lab, v in curves(m.key) if len(v)]
        if c:
            plotted.append(page.plot(plots.cdf(m.label, m.unit, m.scale, c)))
    page.add(f'<div class="plots2">{"".join(plotted)}</div>')
    return page


def write_compare(result: dict[str, Any], run_dirs: list[list[str]], out: str | Path) -> Path:
    """`pytps compare … --html FILE`: run_dirs holds each side's run folders, in result's order."""
    bokeh_module()
    import numpy as np

    runs = [[load_saved_run(p) for p in side] for side in run_dirs]
    labels = [s["label"] for s in result["sides"]]

    def curves(key: str) -> list[tuple[str, Any]]:
        out_: list[tuple[str, Any]] = []
        for label, side in zip(labels, runs, strict=True):
            parts = [r.itl_samples_s() if key == "itl_s" else r.values(key) for r in side]
            out_.append((label, np.concatenate(parts) if parts else np.zeros(0)))
        return out_

    return write_page(compare_page(result, curves), out)
