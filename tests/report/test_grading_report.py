"""Graded answers in the reports of a saved run (docs/grading.md): the console's lines and the HTML
page's section, with E2E of correct and wrong answers drawn apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytps
from pytps.report.grading_lines import grading_lines
from pytps.report.html import write_report
from pytps.results.folder import load_results


def test_console_and_html_show_accuracy_and_split_latency(tmp_path: Path) -> None:
    with pytps.Emulator(ttft_ms=1, itl_us=100, answers="tasks:arithmetic:40:0", answer_accuracy=0.5, seed=2) as emu:
        pytps.run(emu.base_url, tasks="arithmetic", requests=40, concurrency=4, output_tokens=4,
                  price_output=1000.0, out=tmp_path / "run", progress=None)  # fmt: skip
    results = load_results(tmp_path / "run")
    g = results["summary"]["grading"]
    lines = grading_lines(results)
    assert lines[0].startswith(f"accuracy {g['accuracy']:.1%} [95% CI ")
    assert f"{g['correct']} correct of 40 graded" in lines[0]
    assert "USD/correct response" in lines[1] and "time to correct answer p50" in lines[1]
    shown = subprocess.run(
        [sys.executable, "-m", "pytps", "report", str(tmp_path / "run")], capture_output=True, text=True, check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert f"{g['correct']} correct of 40 graded" in shown
    page = write_report(tmp_path / "run", tmp_path / "r.html").read_text()
    assert "Graded answers" in page and "E2E of correct and wrong answers" in page
