"""Issue 29 (6): `pytps report` on a sweep's folder prints its table and knee, as `pytps sweep` did;
report --help names the folder as sweeps write it; a matrix sweep's summary never prints `knee None`."""

from __future__ import annotations

import json
import subprocess
import sys


def _pytps(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=180, cwd=cwd)


def test_report_prints_a_sweep_s_curve_and_knee(tmp_path):
    out = tmp_path / "sw"
    swept = _pytps("sweep", "--concurrency", "1,2", "--requests", "4", "--output-tokens", "8", "--emu-ttft-ms", "1",
                   "--emu-itl-us", "100", "--out", str(out))  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    reported = _pytps("report", str(out))
    assert reported.returncode == 0, reported.stderr
    assert reported.stdout == swept.stdout  # the same table and knee line
    assert "knee (concurrency" in reported.stdout and "TTFT p50 [ms]" in reported.stdout
    as_json = _pytps("report", str(out), "--json")
    assert json.loads(as_json.stdout)["axes"] == {"concurrency": [1, 2]}


def test_report_help_names_sweep_folders_as_sweeps_write_them(tmp_path):
    help_text = _pytps("report", "--help").stdout
    assert "results/sweep-" not in help_text and "-sweep/" in help_text
    swept = _pytps("sweep", "--concurrency", "1", "--requests", "2", "--output-tokens", "4", "--emu-ttft-ms", "1",
                   "--emu-itl-us", "100", cwd=tmp_path)  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    (folder,) = (tmp_path / "results").iterdir()
    assert folder.name.endswith("-sweep")


def test_a_missing_knee_is_said_in_words():
    from pytps.report import matrix_lines as matrix_run
    from pytps.report.sweep_curve import _or_none

    assert _or_none(None) == matrix_run._or_none(None) == "none in this range"
