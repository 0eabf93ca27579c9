"""The HTML report's content, from real runs against pytps.Emulator (fast tier; the page in a real
browser is tests/report/test_html_browser.py, `pytest -m browser`)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytps
from pytps.cli import main
from pytps.report import saved_run
from pytps.report.html import write_report
from pytps.report.saved_run import load_saved_run, timeline


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def run_with_errors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "run"
    with pytps.Emulator(ttft_ms=2, itl_us=300, faults=["500:p=0.2"]) as emu:
        pytps.run(emu.base_url, model="m", out=out, requests=40, concurrency=4, output_tokens=12, input_tokens=16,
                  seed=3)
    return out


def self_contained(text: str) -> None:
    """Nothing fetched by the markup: no external script, stylesheet, image or font. (BokehJS's own
    code names a CDN for MathJax, fetched only for math text, which the report has none of; the
    browser tier checks that the page makes no request at all.)"""
    assert text.count("<script") >= 2  # BokehJS inlined, and the plots' own script
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "<script></script>", text, flags=re.S)
    assert not re.search(r"<script[^>]+src=", markup)
    assert not re.search(r"<link[^>]+href=", markup)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", markup)
    assert "cdn.bokeh.org" not in text


def test_the_run_report_holds_every_part(run_with_errors: Path, tmp_path: Path) -> None:
    out = write_report(run_with_errors, tmp_path / "r.html")
    text = out.read_text()
    self_contained(text)
    results = json.loads((run_with_errors / "results.json").read_text())
    meta, s = results["metadata"], results["summary"]
    # The header: what, when (UTC), model, sizes, load, transport, client host, version.
    for needle in (meta["date_utc"], "when (UTC)", "prompt size [tokens]", "output size [tokens]",
                   "concurrency 4, 40 requests", meta["transport"], meta["client"]["host"], meta["pytps_version"]):
        assert needle in text, needle
    # The summary table, a unit on every row.
    for row in ("TTFT [ms]", "TPOT [ms]", "ITL [ms]", "E2E [ms]", "decode TPS [tok/s]",
                "output throughput [tok/s]"):
        assert row in text, row
    # Its numbers are the summary's, as the console prints them.
    from pytps.report.numbers import fmt

    assert f'<td class="num">{fmt(s["ttft_s"]["p50"] * 1e3, "ms")}</td>' in text
    # CDFs with their percentiles, the timeline, throughput and in flight, errors by class.
    titles = json.dumps(bokeh_doc(text), ensure_ascii=False)
    assert f"TTFT · p50 {fmt(s['ttft_s']['p50'] * 1e3, 'ms')}" in titles
    for title in ("token arrival timeline", "output throughput over time", "requests in flight", "errors by class"):
        assert title in text, title
    assert s["errors"], "the fault gave errors"
    for cls, n in s["errors"].items():
        assert f"<td>{cls}</td><td class=\"num\">{n:,}</td>" in text
    assert "All 40 measured requests" in text
    # The run's warnings (here: its error rate).
    assert "of requests failed" in text and 'class="warn"' in text


def test_the_itl_cdf_is_drawn_from_the_summarys_own_samples(run_with_errors: Path) -> None:
    run = load_saved_run(run_with_errors)
    itl = run.itl_samples_s()
    s = run.summary["itl_s"]
    assert len(itl) == s["count"]
    assert itl.min() == pytest.approx(s["min"], rel=1e-9) and itl.max() == pytest.approx(s["max"], rel=1e-9)
    assert itl.mean() == pytest.approx(s["mean"], rel=1e-6)
    assert len(run.values("ttft_s")) == run.summary["ttft_s"]["count"]


def test_requests_in_flight_reach_the_concurrency_and_never_pass_it(run_with_errors: Path) -> None:
    t, level, binned = load_saved_run(run_with_errors).in_flight()
    assert not binned and level.max() == 4 and level.min() >= 0 and level[-1] == 0
    assert (np.diff(t) > 0).all()


def test_cdf_points_are_samples_and_bounded() -> None:
    values = np.random.default_rng(1).exponential(size=100_000)
    x, p = saved_run.cdf_points(values, points=500)
    assert len(x) <= 500 and p[-1] == 1.0 and x[-1] == values.max()
    assert np.isin(x, values).all() and (np.diff(x) >= 0).all() and (np.diff(p) > 0).all()
    x, p = saved_run.cdf_points(values[:10])
    assert len(x) == 10 and p[0] == pytest.approx(0.1)


def test_the_timeline_samples_whole_requests_within_its_caps(run_with_errors: Path) -> None:
    run = load_saved_run(run_with_errors)
    full = timeline(run)
    assert not full.sampled and len(full.rows) == 40
    events = run.events_by_request()
    assert full.ticks == sum(len(events.get(r["index"], ((),))[0]) for r in full.rows)
    small = timeline(run, max_rows=10, max_ticks=1000)
    assert small.sampled and len(small.rows) == 10 and small.requests_total == 40
    capped = timeline(run, max_rows=40, max_ticks=60)
    assert capped.ticks <= 60 and capped.sampled
    # Every event of a drawn request is a tick, while the tick cap allows.
    for r in capped.rows[:2]:
        assert r["events"] == len(events.get(r["index"], ((),))[0])


def test_the_envelope_is_shown_when_results_have_one(run_with_errors: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run_with_errors, copy)
    results = json.loads((copy / "results.json").read_text())
    assert results["envelope"] is None  # no envelope saved for this host (tests/conftest.py)
    assert "Calibration envelope" not in write_report(copy, tmp_path / "a.html").read_text()
    results["envelope"] = {"floor_s": {"ttft": 0.000012}, "host": "h<1>", "trusted": True}
    (copy / "results.json").write_text(json.dumps(results))
    text = write_report(copy, tmp_path / "b.html").read_text()
    assert "Calibration envelope" in text and "floor_s.ttft" in text and "1.2e-05" in text
    assert "h&lt;1&gt;" in text  # escaped, as every value from the files


def test_report_html_cli_writes_into_the_folder_by_default(run_with_errors: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run_with_errors, copy)
    assert main(["report", str(copy), "--html"]) == 0
    assert (copy / "report.html").stat().st_size > 100_000
    assert f"report: {copy / 'report.html'}" in capsys.readouterr().err
    assert main(["report", str(copy), "--html", str(tmp_path / "x.html")]) == 0
    assert (tmp_path / "x.html").exists()


def test_a_missing_bokeh_is_one_line(run_with_errors: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bokeh" else real(name, *a))
    for mod in [m for m in sys.modules if m == "bokeh" or m.startswith("bokeh.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    assert main(["report", str(run_with_errors), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == 'pytps: error: --html needs the bokeh package: pip install bokeh'
    assert main(["run", "--requests", "1", "--html", "--out", str(tmp_path / "o")]) == 2
    assert "needs the bokeh package" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # checked before anything was measured


def test_run_and_sweep_and_compare_write_html(tmp_path: Path) -> None:
    with pytps.Emulator(ttft_ms=1, itl_us=300) as emu:
        a = cli("run", "--base-url", emu.base_url, "--model", "m", "--requests", "6", "--output-tokens", "6",
                "--input-tokens", "16", "--out", str(tmp_path / "a"), "--html")
        assert a.returncode == 0, a.stderr
        assert (tmp_path / "a" / "report.html").exists()
        b = cli("run", "--base-url", emu.base_url, "--model", "m", "--requests", "6", "--output-tokens", "6",
                "--input-tokens", "16", "--out", str(tmp_path / "b"))
        assert b.returncode == 0, b.stderr
        sw = cli("sweep", "--base-url", emu.base_url, "--model", "m", "--concurrency", "1,2,4", "--requests", "6",
                 "--output-tokens", "6", "--input-tokens", "16", "--out", str(tmp_path / "sw"),
                 "--html", str(tmp_path / "sweep.html"))
        assert sw.returncode == 0, sw.stderr
    text = (tmp_path / "sweep.html").read_text()
    self_contained(text)
    index = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert "per-user decode speed vs aggregate throughput along concurrency" in text
    assert "knee, on decode TPS" in text and "max goodput" in text
    assert text.count("<tr>") >= 1 + len(index["cells"])
    # pytps report on the sweep's folder draws the same page.
    assert cli("report", str(tmp_path / "sw"), "--html").returncode == 0
    assert (tmp_path / "sw" / "report.html").exists()

    c = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(tmp_path / "c.html"))
    assert c.returncode == 0, c.stderr
    text = (tmp_path / "c.html").read_text()
    self_contained(text)
    assert "B − A [95% CI]" in text and "TTFT median [ms]" in text
    assert "Distributions, overlaid" in text and "ITL" in text


def bokeh_doc(text: str) -> Any:
    """The page's Bokeh document, as BokehJS will read it (a JSON text in a JavaScript string)."""
    m = re.search(r"const docs_json = '(.*?)';\n", text, re.S)
    assert m is not None
    (doc,) = json.loads(m.group(1).encode().decode("unicode_escape")).values()
    return doc


def column_lengths(doc: Any) -> dict[str, int]:
    """Named ColumnDataSources -> their points (a column's length)."""
    found: dict[str, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            attrs = node.get("attributes") or {}
            if node.get("name") == "ColumnDataSource" and attrs.get("name"):
                col = next(iter(attrs["data"]["entries"]))[1]
                found[attrs["name"]] = col["shape"][0] if isinstance(col, dict) else len(col)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


def test_the_page_embeds_its_timeline_sources(run_with_errors: Path, tmp_path: Path) -> None:
    text = write_report(run_with_errors, tmp_path / "r.html").read_text()
    lengths = column_lengths(bokeh_doc(text))
    run = load_saved_run(run_with_errors)
    assert lengths == {"timeline_requests": 40, "timeline_ticks": timeline(run).ticks}


def test_sessions_against_a_caching_server_show_length_turn_and_cache_sections(tmp_path: Path) -> None:
    out = tmp_path / "sessions"
    with pytps.Emulator(ttft_ms=2, itl_us=200, prefill_us_per_token=20, prefix_cache_tokens=100_000) as emu:
        pytps.run(emu.base_url, model="m", out=out, turns=3, sessions=6, concurrency=3, output_tokens=8,
                  input_tokens=32, seed=5)
    text = write_report(out, tmp_path / "s.html").read_text()
    summary = json.loads((out / "results.json").read_text())["summary"]
    for needle in ("TTFT against prompt tokens", "E2E against output tokens", "<h2>Per turn</h2>",
                   "<h2>Prefix cache</h2>", f"Hit rate {summary['cache']['hit_rate']:.1%}"):
        assert needle in text, needle
    # One point per successful measured request in the prompt-length scatter: every turn's request.
    x, y, total = load_saved_run(out).pairs("prompt_tokens", "ttft_s")
    assert total == len(x) == summary["requests_ok"] == 18
    assert np.array_equal(np.sort(y), np.sort(load_saved_run(out).values("ttft_s")))


def test_the_length_scatter_samples_evenly_past_its_cap(run_with_errors: Path) -> None:
    run = load_saved_run(run_with_errors)
    x, _, total = run.pairs("output_tokens", "e2e_s", limit=5)
    assert total > 5 and len(x) == 5


def test_a_run_outside_its_envelope_says_so_on_the_page(run_with_errors: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run_with_errors, copy)
    results = json.loads((copy / "results.json").read_text())
    results["envelope"] = {"transport": "native", "inside": False, "reason": "the cell 5000 events/s x 32 failed",
                           "run_events_per_s": 4000.0, "run_concurrency": 32.0, "region": []}
    (copy / "results.json").write_text(json.dumps(results))
    text = write_report(copy, tmp_path / "out.html").read_text()
    assert "Outside the trust envelope" in text and "5000 events/s x 32 failed" in text


def test_the_servers_own_timings_are_rows_of_every_table(run_with_errors: Path, tmp_path: Path) -> None:
    # The emulator reports llama.cpp's `timings` on its OpenAI routes: HTML, Markdown and CSV show
    # them under pytps's own rows, as the console does (report/console.table_rows).
    from pytps.report.tables import csv_text, markdown

    results = json.loads((run_with_errors / "results.json").read_text())
    assert results["summary"]["server_timings"]["requests"] == results["summary"]["requests_ok"]
    page = write_report(run_with_errors, tmp_path / "s.html").read_text()
    for text in (page, markdown(results), csv_text(results)):
        assert "server TPOT [ms]" in text and "server prompt [ms]" in text
