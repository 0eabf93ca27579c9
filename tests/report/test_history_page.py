"""The trend page (`pytps history --html`, issue 41) on a store of ten nightly emulator runs with one
planted TTFT regression (tests/planted_history.py): the planted run is marked with the check's
verdict, every plot has its baseline and band, labels come from the catalogue (a raw key planted in
a title is caught), and the workload is a short table with the JSON behind a disclosure. The same
page in real Chromium: tests/report/test_html_browser.py."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from planted_history import plant

from pytps.report import history, html_history, verdicts
from pytps.report.history import check_each_run, group_runs, parse_limit, trend
from pytps.report.html_page import Page
from pytps.store.store import Store

pytest.importorskip("bokeh")

METRICS = ["ttft_p50", "tpot_p50", "decode_tps_p50", "output_throughput_tps"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    return plant(tmp_path_factory.mktemp("planted"))


def page_of(spec: str, relative: bool = False) -> Page:
    with Store(spec) as store:
        (group,) = group_runs(store.runs())
    limit = parse_limit("10%")
    checks = check_each_run(group, dict.fromkeys(METRICS, limit))
    return html_history.history_page([trend(group, METRICS, None, checks)], limit, relative)


def raw_keys(page: Page) -> list[str]:
    """Every place a raw figure key (ttft_p50, output_throughput_tps, ...) stands where a reader
    reads a label: plot titles, axis labels, legends and table headers."""
    keys = set(history.known_metrics())
    texts = []
    for fig in page.figures.values():
        texts += [fig.title.text, *(a.axis_label or "" for a in (*fig.xaxis, *fig.yaxis))]
        texts += [str(getattr(item.label, "value", "")) for lg in fig.legend for item in lg.items]
    texts += [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", "".join(page.parts), re.S)]
    return [t for t in texts if any(re.search(rf"\b{k}\b", t) for k in keys)]


def test_titles_and_headers_are_the_catalogues_labels(planted: tuple[str, int]) -> None:
    page = page_of(planted[0])
    assert raw_keys(page) == []
    titles = [f.title.text for f in page.figures.values()]
    assert titles == [
        "TTFT p50 [ms] · lower is better",
        "TPOT p50 [ms] · lower is better",
        "decode TPS p50 [tok/s] · higher is better",
        "output throughput [tok/s] · higher is better",
    ]


def test_a_raw_key_planted_in_a_title_is_caught(planted: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_history, "figure_heading", lambda name: name)
    planted_page = page_of(planted[0])
    with pytest.raises(AssertionError):
        assert raw_keys(planted_page) == []


def test_the_planted_regression_is_marked_with_the_checks_verdict(planted: tuple[str, int]) -> None:
    spec, planted_id = planted
    page = page_of(spec)
    ttft = page.figures["plot0"]
    marks = [r for r in ttft.renderers if r.name == "regression"]
    assert len(marks) == 1, "one regression glyph on the TTFT plot"
    assert marks[0].glyph.fill_color == verdicts.COLORS["regression"]
    assert planted_id in marks[0].data_source.data["id"]
    (verdict,) = [v for i, v in zip(marks[0].data_source.data["id"], marks[0].data_source.data["verdict"],
                                    strict=True) if i == planted_id]  # fmt: skip
    # The hover says what the console says of that run (one Finding.verdict for both).
    assert "worse" in verdict and "95% CI" in verdict and "limit 10%" in verdict
    body = "".join(page.parts)
    assert re.search(rf'<tr class="regression"><td>{planted_id}</td>', body)
    # Every plot: a baseline and the band, ±10% around it.
    for fig in page.figures.values():
        names = [a.name for a in fig.center]
        assert "baseline" in names and "no-change band" in names
        (band,) = [a for a in fig.center if a.name == "no-change band"]
        (base,) = [a for a in fig.center if a.name == "baseline"]
        assert band.top - base.location == pytest.approx(abs(base.location) * 0.10)


def test_relative_plots_the_change_against_the_baseline(planted: tuple[str, int]) -> None:
    page = page_of(planted[0], relative=True)
    fig = page.figures["plot0"]
    (band,) = [a for a in fig.center if a.name == "no-change band"]
    assert (band.bottom, band.top) == pytest.approx((-10.0, 10.0))
    ys = fig.renderers[0].data_source.data["y"]
    assert ys[0] == 0.0  # the baseline is the first run
    assert "change against the baseline, in %" in fig.title.text


def test_the_workload_is_a_short_table_with_the_json_behind_a_disclosure(planted: tuple[str, int]) -> None:
    body = "".join(page_of(planted[0]).parts)
    table = re.search(r'<table class="workload">(.*?)</table>', body, re.S)
    assert table is not None
    rows = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table.group(1)))
    assert rows["API"] == "openai-chat" and rows["lengths"] == "input 32 tok, output 16 tok"
    assert rows["load"] == "concurrency 8" and rows["SLO"] == "none"
    assert re.search(r'<details><summary>.*?</summary><pre class="json">\{', body, re.S)


def test_the_console_and_the_page_say_the_same_of_the_latest_run(planted: tuple[str, int], tmp_path: Path) -> None:
    """history check's line and the page's hover come from one Finding: plant the regression last."""
    spec = str(tmp_path / "h.sqlite")
    with Store(planted[0]) as src, Store(spec) as dst:
        runs = [r for r in src.runs() if r.id <= planted[1]]
        for r in runs:
            dst.clock = lambda r=r: r.when_utc  # type: ignore[misc]
            from pytps.results.folder import load_results

            results = load_results(r.folder)
            results["metadata"]["endpoint"]["port"] = 8000
            dst.record(results, r.folder)
    proc = subprocess.run([sys.executable, "-m", "pytps", "history", "check", "--store", spec],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith("REGRESSION ttft_p50")
    out = tmp_path / "trend.html"
    proc = subprocess.run([sys.executable, "-m", "pytps", "history", "--store", spec, "--html", str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    verdict = line.split(": ", 1)[1]
    assert html.escape(verdict) in out.read_text() or verdict in out.read_text()


def test_limits_and_relative_are_in_the_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytps", "history", "--help"], capture_output=True, text=True)
    assert "--relative" in proc.stdout and "--max-change" in proc.stdout


