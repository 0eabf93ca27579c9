"""The HTML report in real headless Chromium (`pytest -m browser`, .ci/steps/60-browser.sh): it
loads with no console error and no network request, its plots are drawn (non-blank by their
pixels in a screenshot), and a 10,000-request run's timeline stays bounded in drawn points."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytps
from pytps.report import saved_run
from pytps.report.html import write_report

pytestmark = pytest.mark.browser

chromium_page = pytest.importorskip("chromium_page", reason="tests/chromium_page.py needs websockets")
Image = pytest.importorskip("PIL.Image", reason="pillow reads the screenshots")

# BokehJS has drawn every plot: its document exists and has no pending work.
RENDERED = "window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"
# Points in every ColumnDataSource of the page: what the canvas draws.
POINTS_JS = """[...Bokeh.documents[0].all_models].filter(m => m.type == "ColumnDataSource")
    .map(m => [m.name || "", Math.max(0, ...Object.values(m.data).map(c => c.length))])"""
PLOT_RECTS_JS = """[...document.querySelectorAll("div.plot")].map(d => {
    const r = d.getBoundingClientRect();
    return [d.dataset.plot, r.left + scrollX, r.top + scrollY, r.width, r.height];
})"""


# Share of a plot area's pixels that must be ink; an empty figure has none (checked by
# test_an_empty_plot_has_no_ink), a thin CDF line about 1%.
MIN_INK = 0.002


@pytest.fixture(scope="module")
def browser() -> Any:
    if chromium_page.chromium_path() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/steps/60-browser.sh does)")
    with chromium_page.Chromium() as c:
        yield c


def load(browser: Any, page: Path) -> float:
    """Opens the page; returns seconds from navigation to every plot drawn."""
    browser.events.clear()
    t0 = time.monotonic()
    browser.open(page)
    browser.wait_until(RENDERED)
    return time.monotonic() - t0


def plot_ink(browser: Any) -> dict[str, float]:
    """Each plot's share of ink pixels in a screenshot of the whole page: coloured or dark pixels
    inside its axes, left of its toolbar. An empty figure has only grey grid lines and a grey
    frame (equal channels, light), which are not ink."""
    rects = browser.evaluate(PLOT_RECTS_JS)
    shot = np.asarray(Image.open(io.BytesIO(browser.screenshot())).convert("RGB"))
    out = {}
    for name, x, y, w, h in rects:
        assert w > 100 and h > 100, (name, w, h)
        area = shot[int(y) + 30 : int(y + h) - 40, int(x) + 60 : int(x + w) - 40].astype(np.int16)
        assert area.size, name
        out[name] = float(((area.max(axis=2) - area.min(axis=2) > 40) | (area.max(axis=2) < 120)).mean())
    return out


def check_clean_and_drawn(browser: Any, page: Path) -> list[str]:
    """No console error or warning, no request but the file itself, every plot non-blank.
    Returns the plots' names."""
    load(browser, page)
    assert browser.console_errors() == []
    urls = browser.requested_urls()
    assert urls and all(u.startswith(("file:", "data:", "blob:")) for u in urls), urls
    ink = plot_ink(browser)
    print(f"\nink {page.name}: " + " ".join(f"{k}={v:.3f}" for k, v in ink.items()))
    assert ink and all(v > MIN_INK for v in ink.values()), ink
    return list(ink)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    out: dict[str, Path] = {}
    with pytps.Emulator(ttft_ms=3, itl_us=400, faults=["500:p=0.1"], power_idle_w=60, power_per_stream_w=15) as emu:
        for name in ("a", "b"):
            # b also scrapes the emulator's /metrics (docs/server-metrics.md): its page draws the series.
            scrape = {"server_metrics": True, "server_metrics_interval": 0.05} if name == "b" else {}
            pytps.run(emu.base_url, model="m", out=root / name, requests=60, concurrency=4, output_tokens=16,
                      input_tokens=16, seed=len(name), **scrape)
            out[name] = root / name
        proc = subprocess.run(
            [sys.executable, "-m", "pytps", "sweep", "--base-url", emu.base_url, "--model", "m", "--concurrency",
             "1,2,4,8", "--requests", "16", "--output-tokens", "16", "--input-tokens", "16", "--out",
             str(root / "sweep"), "--html"],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out["sweep"] = root / "sweep"
    proc = subprocess.run([sys.executable, "-m", "pytps", "compare", str(out["a"]), str(out["b"]), "--html",
                           str(root / "compare.html")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out["compare"] = root / "compare.html"
    return out


def test_a_run_report_loads_clean_and_every_plot_is_drawn(browser: Any, runs: dict[str, Path]) -> None:
    page = write_report(runs["a"])
    names = check_clean_and_drawn(browser, page)
    # 3 CDFs, the timeline, throughput, in flight, TTFT against prompt and E2E against output tokens, errors.
    assert len(names) == 9


def test_a_run_report_with_server_metrics_draws_the_server_series(browser: Any, runs: dict[str, Path]) -> None:
    page = write_report(runs["b"])
    names = check_clean_and_drawn(browser, page)
    # The 9 plots of any run, and the server's: requests running/waiting, generation tok/s, power.
    assert len(names) == 12


def test_a_sweep_report_loads_clean_with_its_curve(browser: Any, runs: dict[str, Path]) -> None:
    assert len(check_clean_and_drawn(browser, runs["sweep"] / "report.html")) == 1


def test_a_compare_report_loads_clean_with_overlaid_cdfs(browser: Any, runs: dict[str, Path]) -> None:
    assert len(check_clean_and_drawn(browser, runs["compare"])) == 5
    # Two sides: two curves on each CDF.
    steps = browser.evaluate(
        '[...Bokeh.documents[0].all_models].filter(m => m.type == "GlyphRenderer" && m.glyph.type == "Step").length'
    )
    assert steps == 10


@pytest.fixture(scope="module")
def run_10k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser10k") / "run"
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        pytps.run(emu.base_url, model="m", out=out, requests=10_000, concurrency=64, output_tokens=16,
                  input_tokens=16)
    return out


def test_10000_requests_stay_bounded_in_drawn_points(browser: Any, run_10k: Path) -> None:
    page = write_report(run_10k)
    seconds = load(browser, page)
    assert browser.console_errors() == []
    points = browser.evaluate(POINTS_JS)
    named = {name: n for name, n in points if name}
    assert named["timeline_requests"] == saved_run.TIMELINE_MAX_ROWS  # sampled: 10,000 is more
    assert 0 < named["timeline_ticks"] <= saved_run.TIMELINE_MAX_TICKS
    total = sum(n for _, n in points)
    # Rows and ticks, three CDFs, in flight, throughput per second, and a few marks.
    bound = (saved_run.TIMELINE_MAX_ROWS + saved_run.TIMELINE_MAX_TICKS + 3 * saved_run.CDF_POINTS
             + saved_run.IN_FLIGHT_POINTS + 1000)
    assert total <= bound, points
    canvases = browser.evaluate('document.querySelectorAll("div.plot").length')
    size_kb = page.stat().st_size / 1024
    # The figure for the closing note (not asserted: it depends on the machine).
    print(f"\n10k report: {size_kb:,.0f} KB, loaded and drawn in {seconds * 1e3:.0f} ms; points drawn {total:,} "
          f"(timeline: {named['timeline_requests']} rows, {named['timeline_ticks']:,} ticks); {canvases} plots")
    check_clean_and_drawn(browser, page)


def test_an_empty_plot_has_no_ink(browser: Any, tmp_path: Path) -> None:
    """The pixel check's own control: the same figure with no data is blank to it."""
    from pytps.report import html_plots
    from pytps.report.html_page import Page

    page = Page("empty")
    page.add(page.plot(html_plots.in_flight(np.zeros(0), np.zeros(0))))
    (tmp_path / "empty.html").write_text(page.render())
    load(browser, tmp_path / "empty.html")
    assert plot_ink(browser) == {"plot0": 0.0}


def test_the_history_trend_page_loads_clean_with_every_plot_drawn(browser: Any, tmp_path: Path) -> None:
    # A week of nightly runs against one emulator, recorded with the store's clock injected.
    from datetime import datetime, timedelta, timezone

    from pytps.report.history import group_runs, trend
    from pytps.report.html_history import write_history
    from pytps.results.folder import load_results
    from pytps.store.store import Store

    start = datetime(2026, 11, 1, 2, 0, tzinfo=timezone.utc)
    with pytps.Emulator(ttft_ms=5, itl_us=300) as emu, Store(str(tmp_path / "h.sqlite")) as store:
        for day in range(7):
            out = tmp_path / f"night{day}"
            pytps.run(emu.base_url, model="m", out=out, requests=20, concurrency=4, output_tokens=8, seed=day,
                      store=False)  # fmt: skip
            store.clock = lambda day=day: start + timedelta(days=day)  # type: ignore[misc]
            store.record(load_results(out), out)
        (group,) = group_runs(store.runs())
    page = write_history([trend(group, ["ttft_p50", "decode_tps_p50"])], tmp_path / "trend.html")
    assert len(check_clean_and_drawn(browser, page)) == 2


# Each table against the page at 1280 px: (its box's width, the table's scroll width, the box's right edge).
TABLES_JS = """[...document.querySelectorAll("table")].map(t => {
    const box = t.parentElement, r = box.getBoundingClientRect();
    return [box.className, box.clientWidth, t.scrollWidth, r.right];
})"""
# The regression marks BokehJS drew: each glyph named "regression", its colour and its runs.
MARKS_JS = """[...Bokeh.documents[0].all_models].filter(m => m.type == "GlyphRenderer" && m.name == "regression")
    .map(m => [m.glyph.fill_color.value ?? m.glyph.fill_color, [...m.data_source.data.id]])"""
BANDS_JS = """[...Bokeh.documents[0].all_models].filter(m => m.type == "BoxAnnotation" && m.name == "no-change band")
    .length"""


def test_the_history_page_marks_the_planted_regression_and_fits_1280_px(browser: Any, tmp_path: Path) -> None:
    """Issue 41: a store with one planted TTFT regression; its point is drawn in the regression's
    colour, every plot has its band, and no element is wider than the page at 1280 px (the wide
    table of eight metrics scrolls in its own box)."""
    from planted_history import plant

    from pytps.report.verdicts import COLORS

    spec, planted = plant(tmp_path)
    page = tmp_path / "trend.html"
    metrics = "ttft_p50,tpot_p50,decode_tps_p50,output_throughput_tps,ttft_p90,e2e_p50,itl_p99,user_tps_p50"
    proc = subprocess.run([sys.executable, "-m", "pytps", "history", "--store", spec, "--endpoint", "127.0.0.1:8000",
                           "--metric", metrics, "--html", str(page)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(check_clean_and_drawn(browser, page)) == 8
    marks = browser.evaluate(MARKS_JS)
    assert any(color == COLORS["regression"] and planted in ids for color, ids in marks), marks
    assert browser.evaluate(BANDS_JS) == 8
    # The planted run's row in the table carries the regression's class and its colour.
    row_color = browser.evaluate(
        f'getComputedStyle([...document.querySelectorAll("tr.regression")].find(r => r.cells[0].textContent == '
        f'"{planted}").querySelector("td.regression")).color'
    )
    assert row_color == "rgb(214, 39, 40)"  # COLORS["regression"], #d62728
    width = browser.evaluate("document.documentElement.clientWidth")
    assert width == 1280
    assert browser.evaluate("document.documentElement.scrollWidth") <= width
    tables = browser.evaluate(TABLES_JS)
    print("\ntables (box, box width, table scroll width, right edge): " + "; ".join(map(str, tables)))
    for box, box_width, scroll_width, right in tables:
        assert box == "tablebox" and right <= width and box_width <= width
    # The runs table of eight metrics is wider than its box: it scrolls there, the page does not.
    assert any(scroll_width > box_width for _, box_width, scroll_width, _ in tables)
    # No element outside a scrolling box reaches past the page's right edge (inside one, it is clipped).
    widest = browser.evaluate(
        "Math.max(...[...document.querySelectorAll('body *')].filter(e => e.matches('div.tablebox') || "
        "!e.closest('div.tablebox')).map(e => e.getBoundingClientRect().right))"
    )
    assert widest <= width


def test_the_rank_page_loads_clean_with_the_pareto_scatter_and_the_rounds(browser: Any, tmp_path: Path) -> None:
    # Two rounds of a rank of two emulators (docs/rank.md): the Pareto scatter and the rounds plot.
    from pytps.report.html_rank import write_rank

    endpoints = {
        name: {"emulator": {"ttft_ms": ttft, "itl_us": 100, "answer_accuracy": 0.9, "seed": seed}}
        for name, ttft, seed in (("fast", 2, 1), ("slow", 8, 2))
    }
    result = pytps.rank(endpoints, out=tmp_path / "rank", store=False, tasks="arithmetic", output_tokens=4,
                        requests=40, concurrency=4, every=0.5, for_=1.0)  # fmt: skip
    assert len(result.data["rounds"]) == 2
    page = write_rank(result.data, tmp_path / "rank.html")
    assert len(check_clean_and_drawn(browser, page)) == 2
    width = browser.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, f"the rank page is {width} px wide"


def test_the_voice_pages_load_clean_and_fit_1280_px(browser: Any, tmp_path: Path) -> None:
    """Issue 36: a text-to-speech run at RTF 1.2 (every request stalls behind 200 ms): its page draws
    the TTFA distribution and the stall timeline with a red bar per stall; a voice sweep's page
    draws its TTFA and stall-rate curves; both fit a 1280 px window."""
    common = ["--api", "openai-speech", "--speech-words", "5", "--emu-speech-chunk-ms", "20", "--no-store"]
    proc = subprocess.run([sys.executable, "-m", "pytps", "run", *common, "--requests", "8", "--concurrency", "4",
                           "--emu-speech-rtf", "1.2", "--out", str(tmp_path / "run"), "--html"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(check_clean_and_drawn(browser, tmp_path / "run" / "report.html")) == 2
    stalls = browser.evaluate(
        '[...Bokeh.documents[0].all_models].filter(m => m.type == "GlyphRenderer" && m.glyph.type == "HBar")'
        '.map(m => m.data_source.data.y.length)'
    )
    import json

    rows = json.loads((tmp_path / "run" / "voice.json").read_text())["requests"]
    assert sum(r["stalls"] for r in rows) > 0 and sum(r["stalls"] for r in rows) in stalls
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    proc = subprocess.run([sys.executable, "-m", "pytps", "sweep", *common, "--requests", "4", "--concurrency", "1,2",
                           "--out", str(tmp_path / "sweep"), "--html"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(check_clean_and_drawn(browser, tmp_path / "sweep" / "report.html")) == 2
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
