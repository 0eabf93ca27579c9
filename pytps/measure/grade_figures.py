"""A run's graded-answer figures (docs/metrics.md, "Graded answers"): accuracy with its Wilson
95% interval, goodput of correct answers, cost per correct response, time to correct answer,
and accuracy by prompt length and by turn. Built as requests finish, a few numbers per request."""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

from pytps.grading.grade import Grade
from pytps.measure.metrics import distribution

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion correct / n (None when n is 0): unlike the
    normal approximation it stays inside [0, 1] and keeps its coverage near 0 and 1 and at
    small n, where benchmark accuracies often sit."""
    if n <= 0:
        return None
    p = correct / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 and n the bound is exactly 0 and 1; rounding would leave it a hair off (1e-17 above 0).
    lo = 0.0 if correct == 0 else max(0.0, centre - half)
    hi = 1.0 if correct == n else min(1.0, centre + half)
    return lo, hi


def _bin(prompt_tokens: int | None) -> str:
    """Prompt lengths in powers of two: 1-64, 65-128, 129-256, ..."""
    if prompt_tokens is None or prompt_tokens < 1:
        return "unknown"
    hi = max(64, 1 << (prompt_tokens - 1).bit_length())
    lo = 1 if hi == 64 else hi // 2 + 1
    return f"{lo}-{hi}"


class GradeFigures:
    """Counts of measured, successful, graded requests."""

    def __init__(self) -> None:
        self.graded = 0  # answers a grader judged (grader errors excluded)
        self.correct = 0
        self.grader_errors = 0
        self.grader_timeouts = 0  # of the grader errors: no verdict within --grader-timeout-s
        self.ungraded = 0  # successful requests without a reference
        self.correct_useful = 0  # correct and within every --slo limit (and validation)
        self.correct_tokens = 0
        self._e2e_correct = array("d")
        self._by_length: dict[str, list[int]] = {}
        self._by_turn: dict[int, list[int]] = {}

    def add(
        self, grade: Grade | None, *, useful: bool, e2e_s: float | None, output_tokens: int,
        prompt_tokens: int | None, turn: int | None,
    ) -> None:  # fmt: skip
        """One measured, successful request."""
        if grade is None:
            self.ungraded += 1
            return
        if grade.correct is None:
            self.grader_errors += 1
            self.grader_timeouts += grade.error == "grader_timeout"
            return
        self.graded += 1
        right = int(grade.correct)
        self.correct += right
        if grade.correct:
            self._e2e_correct.append(math.nan if e2e_s is None else e2e_s)
            if useful:
                self.correct_useful += 1
                self.correct_tokens += output_tokens
        tally = self._by_length.setdefault(_bin(prompt_tokens), [0, 0])
        tally[0] += 1
        tally[1] += right
        if turn is not None:  # multi-turn sessions: accuracy by turn
            by_turn = self._by_turn.setdefault(turn, [0, 0])
            by_turn[0] += 1
            by_turn[1] += right

    @staticmethod
    def _share(n: int, correct: int) -> dict[str, Any]:
        ci = wilson_interval(correct, n)
        return {
            "graded": n,
            "correct": correct,
            "accuracy": correct / n if n else None,
            "accuracy_ci95": ci and list(ci),
        }

    def figures(self, window_s: float | None, cost_total: float | None) -> dict[str, Any]:
        """results.json's summary.grading (docs/results.md)."""
        out = self._share(self.graded, self.correct)
        out.update(
            {
                "wrong": self.graded - self.correct,
                "grader_errors": self.grader_errors,
                "grader_timeouts": self.grader_timeouts,
                "ungraded": self.ungraded,
                "correct_within_slo": self.correct_useful,
                "goodput_correct_rps": self.correct_useful / window_s if window_s else None,
                "goodput_correct_tps": self.correct_tokens / window_s if window_s else None,
                "cost_per_correct_response": cost_total / self.correct
                if cost_total is not None and self.correct
                else None,
                "time_to_correct_answer_s": distribution(np.frombuffer(self._e2e_correct, dtype=np.float64)),
                "by_turn": [{"turn": k, **self._share(*v)} for k, v in sorted(self._by_turn.items())],
                "by_prompt_tokens": [
                    {"prompt_tokens": k, **self._share(*v)}
                    for k, v in sorted(self._by_length.items(), key=lambda kv: _bin_order(kv[0]))
                ],
            }
        )
        return out


def _bin_order(name: str) -> int:
    return int(name.split("-")[0]) if name[0].isdigit() else 1 << 62
