"""The emulator knows the right answer (docs/emulator.md, "Answers"): pytps's graded verdicts equal
the emulator's truth exactly, request by request, on every grader and every dialect (reasoning
streams included), and the Wilson interval covers the emulator's accuracy in about 95% of runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.emulator import answer_book
from pytps.results.folder import load_journal
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner

# One record per grader; "answer" gives the emulator a right answer where the reference is a
# pattern or a schema.
RECORDS: list[dict[str, Any]] = [
    {"id": "exact", "prompt": "Capital of France?", "expected": "Paris"},
    {"id": "exact-fold", "prompt": "Capital of Peru?", "expected": "LIMA", "case_fold": True},
    {"id": "contains", "prompt": "Name a primary colour.", "grader": "contains", "expected": "crimson"},
    {
        "id": "regex",
        "prompt": "Give a year in the 1990s.",
        "grader": "regex",
        "expected": r"\b199\d\b",
        "answer": "1994",
    },
    {"id": "number", "prompt": "What is 6 * 7?", "grader": "number", "expected": 42},
    {"id": "number-tol", "prompt": "What is pi?", "grader": "number", "expected": 3.14159, "tolerance": 0.01},
    {"id": "choice", "prompt": "Pick: A) cat B) dog", "grader": "choice", "expected": "B"},
    {"id": "json", "prompt": "Extract: Ada, 41.", "grader": "json", "expected": {"name": "Ada", "age": 41}},
    {
        "id": "schema",
        "messages": [{"role": "system", "content": "Reply in JSON."}, {"role": "user", "content": "An object with a."}],
        "grader": "json-schema",
        "schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
        "answer": '{"a": 7}',
    },
]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("api", pytps.DIALECTS)
def test_graded_accuracy_equals_the_truth_per_request_on_every_grader(tmp_path: Path, api: str) -> None:
    data = write(tmp_path / "refs.jsonl", RECORDS)
    n = 3 * len(RECORDS)
    # Completions has no reasoning; the others stream 3 reasoning tokens before the answer.
    with pytps.Emulator(ttft_ms=1, itl_us=100, answers=data, answer_accuracy=0.5, reasoning_tokens=3, seed=7) as emu:
        out = tmp_path / "out"
        cfg = make_config(emu.base_url, api=api, dataset=data, output_tokens=8, concurrency=1, requests=n, out=out)
        summary = run_coroutine(Runner(cfg).run()).summary
        truth = sorted(emu.wait_truth(n), key=lambda t: t["seq"])
    lines = sorted(load_journal(out), key=lambda line: line["index"])
    assert len(lines) == len(truth) == n
    assert all(t["answer_sent"] and t["completed"] for t in truth)
    if api != "openai-completions":
        assert all(t["reasoning_tokens"] == 3 for t in truth)
    verdicts = [line["correct"] for line in lines]
    assert verdicts == [t["answer"] == "right" for t in truth], [
        (line["item"], line["why_wrong"])
        for line, t in zip(lines, truth)
        if line["correct"] != (t["answer"] == "right")
    ]
    assert {line["grader"] for line in lines} == {
        "exact",
        "contains",
        "regex",
        "number",
        "choice",
        "json",
        "json-schema",
    }
    assert 0 < summary["grading"]["correct"] < n
    assert summary["grading"]["correct"] == sum(t["answer"] == "right" for t in truth)


def test_the_wilson_interval_covers_p_in_about_95_percent_of_seeded_runs(tmp_path: Path) -> None:
    """100 runs of 40 requests against emulators seeded 0..99 at p = 0.8: the interval holds p in
    ~95 of them (binomially, 88 or more in 99.9% of such batches of runs)."""
    p, runs, n = 0.8, 100, 40
    covered = 0
    for seed in range(runs):
        with pytps.Emulator(
            ttft_ms=0.2, itl_us=20, answers=f"tasks:arithmetic:{n}:1", answer_accuracy=p, seed=seed
        ) as emu:
            cfg = make_config(emu.base_url, tasks="arithmetic", seed=1, output_tokens=2, concurrency=8, requests=n,
                              out=tmp_path / str(seed))  # fmt: skip
            grading = run_coroutine(Runner(cfg).run()).summary["grading"]
            assert grading["correct"] == sum(t["answer"] == "right" for t in emu.wait_truth(n))
        lo, hi = grading["accuracy_ci95"]
        covered += lo <= p <= hi
    assert 88 <= covered <= 100, covered


def test_accuracy_falls_with_the_batch_size_as_told(tmp_path: Path) -> None:
    """p = 0.9 at a batch of one, 0 with any request decoding beside it (drop 1.0 per request)."""
    assert len(answer_book("tasks:choice:4:0")) == 8  # each prompt by its text and by its last line
    with pytps.Emulator(
        ttft_ms=1, itl_us=100, answers="tasks:choice:8:0", answer_accuracy=0.9, answer_accuracy_drop=1.0
    ) as emu:  # fmt: skip
        cfg = make_config(emu.base_url, tasks="choice", output_tokens=40, concurrency=4, requests=8, out=tmp_path)
        run_coroutine(Runner(cfg).run())
        truth = emu.wait_truth(8)
    crowded = [t for t in truth if t["batch"][0] > 1]
    assert crowded and all(t["answer"] == "wrong" for t in crowded)


def test_records_the_emulator_cannot_answer_are_refused() -> None:
    with pytest.raises(
        ValueError, match=r'answers\[0\]: the emulator cannot make an answer for grader regex: add "answer"'
    ):
        answer_book([{"prompt": "p", "grader": "regex", "expected": "x+"}])
    with pytest.raises(ValueError, match="no wrong answer"):
        answer_book([{"prompt": "p", "grader": "contains", "expected": "a"}])  # every text holds an "a"
