"""Issue 40, defects 13 and 15 (grading): the workload fingerprint covers the reference set, the
grader, the extraction rule and a user grader's source; a score outside [0, 1] is grader_error; a
user grader's print() goes to stderr, so `pytps run --json` stays JSON. Real runs against the
emulator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.store.fingerprint import fingerprint
from pytps.results.folder import load_journal, load_results

GRADERS = '''
def loose(request, text, record):
    return record["expected"].lower() in text.lower()

def five(request, text, record):
    return 5

def scored(request, text, record):
    return {"correct": True, "score": 1.5}

def nan_score(request, text, record):
    return float("nan")

def chatty(request, text, record):
    print("GRADER SAYS HELLO")
    return True
'''


@pytest.fixture
def graders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "hardening_graders_40.py").write_text(GRADERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hardening_graders_40", None)
    return "hardening_graders_40"


def dataset(path: Path, n: int = 4, expected: str = "C{i}X", **extra: Any) -> Path:
    path.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"code of item {i}?",
                                        "expected": expected.format(i=i), **extra}) + "\n" for i in range(n)))  # fmt: skip
    return path


def run_fingerprint(tmp_path: Path, emu: pytps.Emulator, name: str, **settings: Any) -> str:
    out = tmp_path / name
    pytps.run(emu.base_url, model="m", out=out, requests=4, concurrency=1, output_tokens=4, store=False, **settings)
    return fingerprint(load_results(out)["metadata"])


def test_the_fingerprint_covers_grader_extraction_references_and_user_source(tmp_path: Path, graders: str) -> None:
    data = dataset(tmp_path / "d.jsonl")
    other_refs = dataset(tmp_path / "d2.jsonl", expected="Z{i}")
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        fp = {
            "exact": run_fingerprint(tmp_path, emu, "exact", dataset=data, grader="exact"),
            "exact again": run_fingerprint(tmp_path, emu, "exact2", dataset=data, grader="exact"),
            "contains": run_fingerprint(tmp_path, emu, "contains", dataset=data, grader="contains"),
            "user": run_fingerprint(tmp_path, emu, "user", dataset=data, grader=f"{graders}:loose"),
        }
        # The same file name with other references, and an extraction rule given per record.
        (tmp_path / "d.jsonl").write_text(other_refs.read_text())
        fp["other references"] = run_fingerprint(tmp_path, emu, "refs", dataset=data, grader="exact")
        dataset(tmp_path / "d.jsonl", extract="last_line")
        fp["extract"] = run_fingerprint(tmp_path, emu, "extract", dataset=data, grader="exact")
        dataset(tmp_path / "d.jsonl")
        # The user grader's code edited: another workload.
        (tmp_path / f"{graders}.py").write_text(GRADERS.replace(".lower() in", ".casefold() in"))
        sys.modules.pop(graders, None)
        fp["user edited"] = run_fingerprint(tmp_path, emu, "user2", dataset=data, grader=f"{graders}:loose")
    print(fp)
    assert fp["exact"] == fp["exact again"]
    distinct = {k: v for k, v in fp.items() if k != "exact again"}
    assert len(set(distinct.values())) == len(distinct), fp


def test_a_run_without_grading_keeps_its_fingerprint() -> None:
    """Runs recorded before graders were fingerprinted, with none, stay comparable with new ones."""
    meta = {"api": "openai-chat", "workload": {"kind": "synthetic", "input_tokens": 8, "output_tokens": 4},
            "load": {"mode": "concurrency", "concurrency": 1}, "slo": {"grading": None}}  # fmt: skip
    assert fingerprint(meta) == fingerprint({**meta, "slo": {}})


@pytest.mark.parametrize("which", ["five", "scored", "nan_score"])
def test_a_score_outside_0_1_is_grader_error(tmp_path: Path, graders: str, which: str) -> None:
    data = dataset(tmp_path / "d.jsonl")
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        pytps.run(emu.base_url, model="m", out=tmp_path / "r", requests=4, concurrency=1, output_tokens=4,
                  store=False, dataset=data, grader=f"{graders}:{which}")  # fmt: skip
    lines = load_journal(tmp_path / "r")
    assert len(lines) == 4
    for line in lines:
        assert line["correct"] is None, line
        assert line["why_wrong"].startswith("grader_error: ValueError:") and "[0, 1]" in line["why_wrong"]


def test_a_graders_print_goes_to_stderr_not_into_json(tmp_path: Path, graders: str) -> None:
    data = dataset(tmp_path / "d.jsonl")
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        proc = subprocess.run(
            [sys.executable, "-m", "pytps", "run", "--base-url", emu.base_url, "--model", "m", "--requests", "4",
             "--concurrency", "1", "--output-tokens", "4", "--dataset", str(data), "--grader", f"{graders}:chatty",
             "--out", str(tmp_path / "r"), "--no-store", "--json"],
            capture_output=True, text=True, timeout=120, env={**__import__("os").environ,
                                                             "PYTHONPATH": str(tmp_path)},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # stdout is the summary, whole
    assert "GRADER SAYS HELLO" in proc.stderr
