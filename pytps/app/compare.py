"""`pytps compare` as a job: saved runs side by side, each against the first (the baseline), with
bootstrap confidence intervals on the differences (pytps.report.compare does the arithmetic). The
CLI and the library's pytps.compare(...) call compare() and print or read its outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ComparePlan:
    """The comparison's own settings (`pytps compare`'s flags)."""

    resamples: int = 2000  # bootstrap resamples
    seed: int = 0  # the bootstrap's seed: the same seed, the same intervals
    max_days: float = 7.0  # warn when the runs started more than this many days apart


@dataclass(frozen=True)
class CompareOutcome:
    result: dict[str, Any]  # the comparison (`pytps compare --json` prints it)
    html: Path | None  # the HTML page written, if one was asked for


def compare(
    runs: Sequence[str | Path | Sequence[str | Path]],
    plan: ComparePlan | None = None,
    *,
    html: str | Path | None = None,
) -> CompareOutcome:
    """Each side is a results folder, or several repeated runs of one setup (a list, or the
    folders joined by commas as the CLI takes them); the first side is the baseline."""
    from pytps.errors import ConfigError
    from pytps.report.compare import compare as compare_sides
    from pytps.report.compare import load_side, side_labels

    plan = plan or ComparePlan()
    specs = [_spec(side) for side in runs]
    if len(specs) < 2:
        raise ConfigError("compare needs at least two runs (or run lists): a baseline and one to set against it")
    sides = [load_side(spec, label) for spec, label in zip(specs, side_labels(len(specs)), strict=True)]
    result = compare_sides(sides, resamples=plan.resamples, seed=plan.seed, max_days=plan.max_days)
    written = None
    if html:
        from pytps.report.html import write_compare

        written = write_compare(result, [[str(r.path) for r in side.runs] for side in sides], html)
    return CompareOutcome(result, written)


def _spec(side: str | Path | Sequence[str | Path]) -> str:
    """A side as the CLI writes it: DIR, or DIR1,DIR2,... for repeated runs."""
    if isinstance(side, (str, Path)):
        return str(side)
    return ",".join(str(p) for p in side)
