"""Graded answers on a real llama-server (docs/grading.md): its tiny random model answers the
built-in tasks, and accuracy is near zero, which is the point: the graders run on real responses,
and every verdict is checked against a direct reading of the journal's kept text."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytps
from pytps.grading.graders import grade_text, parse_reference
from pytps.results.folder import load_journal
from pytps.workload.tasks import TaskWorkload

pytestmark = pytest.mark.real_server


def test_graders_run_on_real_answers_and_agree_with_the_kept_text(llama_server: str, tmp_path: Path) -> None:
    tasks = "arithmetic,choice,json-extract"
    result = pytps.run(
        llama_server, api="openai-chat", tasks=tasks, seed=3, input_tokens=48, output_tokens=24,
        requests=24, concurrency=4, keep_text=True, out=tmp_path / "graded", progress=None,
    )  # fmt: skip
    grading = result.summary["grading"]
    lines = [line for line in load_journal(result.out_dir) if line["ok"] and not line["warmup"]]
    assert lines and grading["graded"] == len(lines) and grading["grader_errors"] == 0
    workload = TaskWorkload(tasks, 48, 24, seed=3)
    for line in lines:
        item, _, raw = workload.item(line["index"])
        assert line["item"] == item
        ref = parse_reference(raw, where=item, item=item)
        assert ref is not None and line["grader"] == ref.grader
        again = grade_text(ref, line["answer_text"])  # the verdict, from what the journal kept
        assert (again.correct, again.reason, again.extracted) == (
            line["correct"], line["why_wrong"], line["extracted_answer"],
        )  # fmt: skip
    # A random model: right only by accident.
    assert grading["accuracy"] <= 0.5, grading
    lo, hi = grading["accuracy_ci95"]
    assert lo <= grading["accuracy"] <= hi
    print(f"llama-server graded: accuracy {grading['accuracy']:.1%} [{lo:.1%}, {hi:.1%}] over {grading['graded']}")
