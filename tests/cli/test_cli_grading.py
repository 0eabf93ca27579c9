"""Graded answers from the command line (docs/grading.md): a built-in task set against the built-in
emulator answering with a known accuracy, a user's grader by module:function, and bad input as
one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytps.results.folder import load_journal, load_results


def pytps_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytps", *args], capture_output=True, text=True, cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=300,
    )  # fmt: skip


def test_run_tasks_against_the_emulator_prints_accuracy_and_its_interval(tmp_path: Path) -> None:
    out = tmp_path / "run"
    p = pytps_cli(
        "run", "--tasks", "arithmetic,choice", "--requests", "60", "--concurrency", "4", "--output-tokens", "8",
        "--emu-answer-accuracy", "0.8", "--emu-itl-us", "100", "--emu-ttft-ms", "1", "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "accuracy " in p.stdout and "[95% CI " in p.stdout and "correct of 60 graded" in p.stdout
    grading = load_results(out)["summary"]["grading"]
    lines = load_journal(out)
    assert grading["correct"] == sum(bool(line["correct"]) for line in lines if not line["warmup"])
    assert 0 < grading["correct"] < 60


def test_run_with_a_user_grader_by_module_and_function(tmp_path: Path) -> None:
    (tmp_path / "house_grader.py").write_text(
        "async def grade(request, text, record):\n    return {'correct': 'Answer:' in text, 'reason': 'no marker'}\n"
    )
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"q {i}", "expected": str(i)}) + "\n" for i in range(5)))
    out = tmp_path / "run"
    p = pytps_cli(
        "run", "--dataset", str(data), "--output-tokens", "6", "--requests", "10", "--grader", "house_grader:grade",
        "--emu-answer-accuracy", "0.5", "--emu-itl-us", "100", "--emu-ttft-ms", "1", "--out", str(out),
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = load_journal(out)
    # The emulator knows each record: every answer carries the marker, right or wrong.
    assert {line["grader"] for line in lines} == {"house_grader:grade"}
    assert all(line["correct"] is True for line in lines)


def test_bad_grader_and_bad_record_are_one_line_and_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "expected": "1", "grader": "json-schema", "schema": "{"}) + "\n")
    nowhere = ("--base-url", "http://127.0.0.1:9")  # checked before any request: nothing is sent
    p = pytps_cli("run", *nowhere, "--dataset", str(data), "--output-tokens", "4", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and f"{data}:1: schema is not JSON" in p.stderr
    p = pytps_cli("run", *nowhere, "--tasks", "arithmetic", "--grader", "nowhere_mod:fn", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "cannot import nowhere_mod" in p.stderr
    p = pytps_cli("run", *nowhere, "--tasks", "sudoku", cwd=tmp_path)
    assert p.returncode == 2 and "'sudoku' is not a built-in task set" in p.stderr
