"""A grader's verdict on one response (docs/grading.md): the value a RequestRecord carries from
the moment its answer is graded to its journal line and the run's summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Grade:
    """correct: True / False, None when the grader raised (then `error` holds the exception's
    text and the request counts as grader_error). score: the grader's own score in [0, 1] when
    it gives one (built-in graders: 1.0 or 0.0). reason: why the answer is not correct.
    extracted: what the extraction rule took from the answer text (kept only with --keep-text)."""

    item: str  # the dataset item's id, the same in every run over the dataset (compare pairs on it)
    grader: str  # a built-in grader's name, or module:function
    correct: bool | None
    score: float | None = None
    reason: str | None = None
    extracted: str | None = None
    error: str | None = None

    def journal_fields(self, keep_text: bool) -> dict[str, Any]:
        """The request's grading keys in requests.jsonl (docs/results.md)."""
        out: dict[str, Any] = {
            "item": self.item,
            "grader": self.grader,
            "correct": self.correct,
            "score": self.score,
            "why_wrong": self.reason,
        }
        if keep_text:
            out["extracted_answer"] = self.extracted
        return out
