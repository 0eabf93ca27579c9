"""Graded answers of two runs paired item by item (docs/compare.md, "Accuracy"): the accuracy
difference with its 95% interval and McNemar's exact test.

Why McNemar and not a bootstrap: the runs graded the same items, so what differs is only the
items one side got right and the other wrong (the discordant pairs, b and c). McNemar's exact
test asks whether b and c differ more than a fair coin would make them: exact at any count,
with no resampling noise, so a report of the same runs gives the same verdict every time; a
bootstrap of paired binary outcomes approximates the same thing less well at small b + c. The
interval is Bonett & Price's adjusted Wald interval for paired proportions (good coverage at
the counts benchmarks have, from b, c and the pairs alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pytps.measure.grade_figures import Z95
from pytps.results.folder import SavedResults


def graded_items(runs: Sequence[SavedResults]) -> dict[tuple[str, int], bool]:
    """(item, occurrence) -> correct, over measured requests a grader judged. An item a run asked
    twice (a dataset cycled) pairs its first answer with the other run's first, and so on."""
    out: dict[tuple[str, int], bool] = {}
    seen: dict[str, int] = {}
    for k, run in enumerate(runs):
        for line in sorted(run.measured(), key=lambda line: line["index"]):
            item, correct = line.get("item"), line.get("correct")
            if item is None or not isinstance(correct, bool):
                continue
            key = f"{k}|{item}" if len(runs) > 1 else item  # repeated runs: each run's items apart
            n = seen.get(key, 0)
            seen[key] = n + 1
            out[(key, n)] = correct
    return out


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: the binomial(b + c, 1/2) tail at min(b, c), doubled."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / float(2**n)
    return float(min(1.0, 2 * tail))


def paired_interval(b: int, c: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Bonett-Price 95% interval of (other − base) accuracy, b: base right / other wrong, c: the
    reverse, n: pairs."""
    if n == 0:
        return None
    p12, p21 = (b + 1) / (n + 2), (c + 1) / (n + 2)
    d = p21 - p12
    se = math.sqrt(max(0.0, (p12 + p21 - d * d) / (n + 2)))
    return max(-1.0, d - z * se), min(1.0, d + z * se)


def accuracy_diff(base: Sequence[SavedResults], other: Sequence[SavedResults]) -> dict[str, Any] | None:
    """The paired accuracy difference other − base, or None when neither side was graded."""
    a, o = graded_items(base), graded_items(other)
    if not a and not o:
        return None
    shared = a.keys() & o.keys()
    b = sum(a[k] and not o[k] for k in shared)
    c = sum(o[k] and not a[k] for k in shared)
    n = len(shared)
    p = mcnemar_exact_p(b, c)
    ci = paired_interval(b, c, n)
    return {
        "pairs": n,
        "base_accuracy": sum(a[k] for k in shared) / n if n else None,
        "other_accuracy": sum(o[k] for k in shared) / n if n else None,
        "diff": (c - b) / n if n else None,
        "ci95": None if ci is None else list(ci),
        "base_only_right": b,
        "other_only_right": c,
        "mcnemar_p": p,
        "significant": n > 0 and p < 0.05,
        "unpaired": {"base": len(a.keys() - shared), "other": len(o.keys() - shared)},
    }


def pairing_warnings(label: str, base: str, d: dict[str, Any]) -> list[str]:
    un = d["unpaired"]
    if not un["base"] and not un["other"]:
        return []
    return [
        f"{label} and {base} graded different items: {un['base']} graded answers of {base} and {un['other']} "
        f"of {label} have no partner and are left out of the accuracy difference ({d['pairs']} pairs)."
    ]
