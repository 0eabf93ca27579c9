"""Issue 29 (3): a second run into the same --out folder is refused in one line, the folder untouched."""

from __future__ import annotations

import subprocess
import sys


def _run(out, *extra):
    return subprocess.run(
        [sys.executable, "-m", "pytps", "run", "--requests", "3", "--output-tokens", "4", "--emu-ttft-ms", "1",
         "--emu-itl-us", "100", "--out", str(out), *extra],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_second_run_into_a_folder_that_holds_one_is_refused(tmp_path):
    out = tmp_path / "r"
    assert _run(out).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    second = _run(out, "--requests", "5")
    assert second.returncode != 0
    errors = [line for line in second.stderr.splitlines() if line.startswith("pytps: error:")]
    assert len(errors) == 1 and "already holds a run" in errors[0] and str(out) in errors[0], second.stderr
    assert "Traceback" not in second.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_the_library_refuses_it_too(tmp_path):
    import pytest

    import pytps

    (tmp_path / "requests.jsonl").write_text("{}\n")
    with pytest.raises(pytps.ConfigError, match="already holds a run"):
        pytps.run("http://127.0.0.1:9", requests=1, out=tmp_path)
    assert (tmp_path / "requests.jsonl").read_text() == "{}\n"
