"""Issue 40, defects 4 and 6: no answer can hang a run, and no finished request waits unjournaled
for its grader.

- regexes are matched by RE2 in linear time (`(a+)+$` on "a"*34 + "b": backtracking takes hours);
- a user's grader (sync, async, busy), a JSON Schema's `pattern` and a regex only Python's engine
  takes run in a worker process killed at --grader-timeout-s: verdict grader_timeout;
- a request is journaled when its timing ends ("grading": "pending") and its verdict appended; a
  run stopped by SIGTERM while a grader hangs keeps every request (exit 143).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.measure.slo import Validation
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner

EVIL = "(a+)+$"
EVIL_TEXT = "a" * 34 + "b"

HANGING = """
import asyncio, time

def busy(request, text, record):
    while True:
        pass

async def sleepy(request, text, record):
    await asyncio.sleep(3600)

async def busy_async(request, text, record):
    while True:
        pass

def fine(request, text, record):
    return record["id"] != "q1"

def chatty(request, text, record):
    print("this goes to stderr, not into a frame")
    return True
"""


@pytest.fixture
def hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "hanging_graders_40.py").write_text(HANGING)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hanging_graders_40", None)
    return "hanging_graders_40"


def _dataset(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _run(tmp_path: Path, emu: pytps.Emulator, **settings: Any) -> tuple[dict[str, Any], list[dict[str, Any]], float]:
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    cfg = make_config(emu.base_url, out=out, output_tokens=4, **settings)
    t = time.monotonic()
    result = run_coroutine(Runner(cfg).run())
    return result.summary, load_journal(out), time.monotonic() - t


def test_a_backtracking_regex_grades_in_linear_time_in_a_fresh_process() -> None:
    """In a child with a hard limit: on the old code (Python's re) this took hours."""
    code = (
        "import asyncio\n"
        "from pytps.grading.graders import parse_reference, grade_text\n"
        f"ref = parse_reference({{'expected': {EVIL!r}, 'grader': 'regex'}}, where='w', item='i')\n"
        f"g = grade_text(ref, {EVIL_TEXT!r})\n"
        "print(g.correct)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    from pytps.grading.graders import parse_reference

    ref = parse_reference({"expected": EVIL, "grader": "regex"}, where="w", item="i")
    assert ref is not None and not ref.isolated  # RE2 in the run's process, no worker needed


def test_expect_regex_is_re2_and_python_only_syntax_is_one_line() -> None:
    v = Validation(regex=EVIL)
    assert v.failure(EVIL_TEXT) is not None and v.failure("aaa") is None
    with pytest.raises(ConfigError) as err:
        Validation(regex=r"(a)\1")
    assert "\n" not in str(err.value) and "RE2" in str(err.value)


@pytest.mark.parametrize("which", ["busy", "sleepy", "busy_async"])
def test_a_user_grader_that_never_returns_is_grader_timeout(tmp_path: Path, hanging: str, which: str) -> None:
    data = _dataset(tmp_path / "d.jsonl", [{"id": f"q{i}", "prompt": f"p{i}", "expected": "x"} for i in range(4)])
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        summary, lines, wall_s = _run(
            tmp_path, emu, dataset=data, grader=f"{hanging}:{which}", concurrency=4, requests=4,
            grader_timeout_s=1.0,
        )  # fmt: skip
    assert len(lines) == 4
    assert all(line["why_wrong"].startswith("grader_timeout: no verdict within 1 s") for line in lines)
    assert all(line["grading"] == "graded" and line["correct"] is None for line in lines)
    g = summary["grading"]
    assert g["grader_errors"] == 4 and g["grader_timeouts"] == 4
    assert summary["not_useful"]["grader_timeout"] == 4
    assert wall_s < 30  # four deadlines of 1 s, graded side by side, not a hang


def test_json_schema_patterns_and_python_only_regexes_are_under_the_deadline(tmp_path: Path) -> None:
    pytest.importorskip("jsonschema")
    from fault_servers import FaultServer, event
    from hostile import answer

    schema = {"type": "object", "properties": {"k": {"type": "string", "pattern": EVIL}}}
    records = [
        {"id": "schema", "prompt": "p", "grader": "json-schema", "schema": schema},
        {"id": "lookahead", "prompt": "p", "grader": "regex", "expected": r"(a|aa)+(?=c)"},
        {"id": "quick", "prompt": "p", "grader": "regex", "expected": EVIL},
    ]
    data = _dataset(tmp_path / "d.jsonl", records)
    text = json.dumps({"k": EVIL_TEXT})  # every answer: backtracking for Python's re, linear for RE2
    body = event(text) + b"data: [DONE]\n\n"
    with FaultServer(answer(body)) as srv:
        cfg = make_config(
            srv.url, model="m", out=tmp_path / "run", dataset=data, concurrency=3, requests=3,
            grader_timeout_s=1.0, output_tokens=4,
        )  # fmt: skip
        run_coroutine(Runner(cfg).run())
    by_item = {line["item"]: line for line in load_journal(tmp_path / "run")}
    assert by_item["schema"]["why_wrong"].startswith("grader_timeout:")
    assert by_item["lookahead"]["why_wrong"].startswith("grader_timeout:")
    assert by_item["quick"]["correct"] is False  # RE2: answered at once, no match
    assert by_item["quick"]["why_wrong"].startswith("the answer does not match")


def test_a_graded_request_is_journaled_before_its_verdict_and_merged_after(tmp_path: Path, hanging: str) -> None:
    data = _dataset(tmp_path / "d.jsonl", [{"id": f"q{i}", "prompt": f"p{i}", "expected": "x"} for i in range(3)])
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        summary, lines, _ = _run(tmp_path, emu, dataset=data, grader=f"{hanging}:fine", concurrency=1, requests=3)
    (folder,) = tmp_path.glob("run*")
    raw = [json.loads(t) for t in (folder / "requests.jsonl").read_text().splitlines()]
    assert [r.get("grading") for r in raw if "verdict_of" not in r] == ["pending"] * 3
    assert sorted(r["verdict_of"] for r in raw if "verdict_of" in r) == sorted(r["index"] for r in lines)
    assert len(lines) == 3 and all(line["grading"] == "graded" for line in lines)
    assert sorted(line["correct"] for line in lines) == [False, True, True]
    assert summary["grading"]["correct"] == 2


def test_a_graders_print_does_not_break_the_worker(tmp_path: Path, hanging: str) -> None:
    data = _dataset(tmp_path / "d.jsonl", [{"id": "q0", "prompt": "p", "expected": "x"}])
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        _, lines, _ = _run(tmp_path, emu, dataset=data, grader=f"{hanging}:chatty", concurrency=1, requests=2)
    assert [line["correct"] for line in lines] == [True, True]


def test_sigterm_while_a_grader_hangs_keeps_every_request(tmp_path: Path) -> None:
    """The issue's case: a hanging grader, then SIGTERM. Before: the journal had 0 lines."""
    stuck = "import time\ndef grade(request, text, record):\n    time.sleep(3600)\n"
    stuck = "import time\ndef grade(request, text, record):\n    time.sleep(3600)\n"
    (tmp_path / "stuck_grader_40.py").write_text(stuck)
    data = _dataset(tmp_path / "d.jsonl", [{"id": f"q{i}", "prompt": f"p{i}", "expected": "x"} for i in range(8)])
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytps", "run", "--dataset", str(data), "--grader", "stuck_grader_40:grade",
         "--requests", "8", "--concurrency", "8", "--output-tokens", "4", "--emu-ttft-ms", "1",
         "--emu-itl-us", "100", "--out", str(out)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        journal = out / "requests.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_text().count("\n") >= 8:
                break
            time.sleep(0.1)
        assert journal.read_text().count('"grading":"pending"') == 8  # journaled while graded
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, stderr
    lines = load_journal(out)
    assert len(lines) == 8
    assert all(line["grading"] == "stopped" and line["why_wrong"].startswith("grader_stopped") for line in lines)
    summary = load_results(out)["summary"]
    assert summary["requests_total"] == 8 and summary["grading"]["grader_errors"] == 8
