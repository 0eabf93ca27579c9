"""The verdict of `pytps rank` (docs/rank.md), from the saved results folders of one round:
every endpoint's figures on the items all of them answered, the paired bootstrap interval of every
pairwise difference of the objective (the same item positions drawn for every side), McNemar's
exact test for accuracy (report/paired), eligibility under the constraints, rank groups from
significance, the Pareto front, and the like-for-like lines.

Ranks as groups: an endpoint's rank is 1 + the number of eligible endpoints significantly better
than it, as rank intervals are read in public model leaderboards; endpoints with no significant
difference between them share a rank. Significant: the pairs of eligible endpoints are one family
under Holm's step-down (`holm`), so alike endpoints are split at most 5% of the time however many
are ranked; with two endpoints, a difference's 95% interval leaves out 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.measure.bootstrap import paired_replicates
from pytps.measure.grade_figures import wilson_interval
from pytps.report.paired import mcnemar_exact_p, paired_interval
from pytps.report.rank_objectives import CORRECT, COST, E2E, OBJECTIVES, TTFT, USER_TPS, Objective
from pytps.results.folder import SavedResults
from pytps.store.store import endpoint_of


def objective_named(name: str | None, graded: bool) -> Objective:
    """The objective asked for; None: time to a correct answer when graded, else E2E p50."""
    if name is None:
        return OBJECTIVES["time_to_correct" if graded else "e2e_p50"]
    try:
        return OBJECTIVES[name.replace("-", "_")]
    except KeyError:
        raise ConfigError(f"--objective {name!r}: choose one of {', '.join(OBJECTIVES)}") from None


def _stat(obj: Objective) -> Callable[[np.ndarray], np.ndarray]:
    """(replicates, items, columns) -> (replicates,)."""
    if obj.stat == "per_correct":

        def per_correct(a: np.ndarray) -> np.ndarray:
            correct = np.nansum(a[..., CORRECT], axis=-1)
            total = np.nansum(a[..., obj.column], axis=-1)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(correct > 0, total / np.maximum(correct, 1), np.nan)

        return per_correct
    q = float(obj.stat[1:])

    def percentile(a: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate with no value: NaN
            return np.asarray(np.nanpercentile(a[..., obj.column], q, axis=-1))

    return percentile


def _rows(run: SavedResults) -> dict[tuple[str, int], list[float]]:
    """(item or request index, occurrence) -> the item's columns, over measured requests."""
    out: dict[tuple[str, int], list[float]] = {}
    seen: dict[str, int] = {}
    for line in sorted(run.measured(), key=lambda line: int(line.get("index") or 0)):
        key = str(line["item"]) if line.get("item") is not None else f"#{line.get('index')}"
        n = seen.get(key, 0)
        seen[key] = n + 1
        ok = bool(line.get("ok"))
        correct = line.get("correct")
        c = float(correct) if isinstance(correct, bool) else math.nan

        e2e = _num(line, "e2e_s", ok)
        row = [e2e, _num(line, "ttft_s", ok), _num(line, "user_tps", ok), _num(line, "cost"), c]
        out[(key, n)] = [*row, e2e if c == 1.0 else math.nan]
    return out


def _num(line: dict[str, Any], name: str, when: bool = True) -> float:
    v = line.get(name)
    return float(v) if when and isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _accuracy(rows: dict[tuple[str, int], list[float]]) -> tuple[int, int]:
    graded = [r[CORRECT] for r in rows.values() if not math.isnan(r[CORRECT])]
    return int(sum(graded)), len(graded)


def _ci(values: np.ndarray) -> list[float] | None:
    finite = values[np.isfinite(values)]
    if finite.size < values.size * 0.9 or finite.size == 0:
        return None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return [float(lo), float(hi)]


def block_length(items: int) -> int:
    """The moving-block bootstrap's block: the cube root of the items, rounded up (Hall, Horowitz
    and Jing's rate for a distribution's quantile; 4 for 50 items, 8 for 400): long enough to keep
    a burst of load together, short enough to leave many blocks to draw from."""
    root: float = math.pow(items, 1 / 3)
    return max(1, math.ceil(root - 1e-9))


def verdict(
    sides: Sequence[tuple[str, SavedResults]],
    *,
    objective: str | None = None,
    min_accuracy: float | None = None,
    max_error_rate: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The rank of one round: sides are (name, results folder) in the order given."""
    if len(sides) < 2:
        raise ConfigError("pytps rank needs at least two endpoints")
    rows = [_rows(run) for _, run in sides]
    graded_all = all(_accuracy(r)[1] > 0 for r in rows)
    obj = objective_named(objective, graded_all)
    # In the first endpoint's send order: the block bootstrap keeps neighbours in time together.
    sent = {key: k for k, key in enumerate(rows[0])}
    shared = sorted(set.intersection(*(set(r) for r in rows)), key=sent.__getitem__)
    if not shared:
        raise ConfigError("the endpoints answered no item in common: nothing to rank on")
    arrays = [np.array([r[k] for k in shared], dtype=np.float64) for r in rows]
    stat = _stat(obj)
    block = block_length(len(shared))
    reps = paired_replicates(arrays, stat, resamples, np.random.default_rng(seed), block)
    points = [float(stat(a[None, ...])[0]) for a in arrays]

    endpoints: list[dict[str, Any]] = []
    for k, ((name, run), r) in enumerate(zip(sides, rows, strict=True)):
        meta, summary = run.meta, run.summary
        correct, graded = _accuracy(r)
        acc_ci = wilson_interval(correct, graded)
        total = int(summary.get("requests_total") or len(run.measured()))
        ok = int(summary.get("requests_ok") or 0) if summary else sum(bool(x.get("ok")) for x in run.measured())
        errors = total - ok
        err_rate = errors / total if total else None
        why: list[str] = []
        if min_accuracy is not None:
            if acc_ci is None:
                why.append(f"no graded answers, so --min-accuracy {min_accuracy:g} cannot be checked")
            elif acc_ci[0] < min_accuracy:
                why.append(
                    f"accuracy {correct / graded:.3f} [{acc_ci[0]:.3f}, {acc_ci[1]:.3f}]: its lower bound is "
                    f"below --min-accuracy {min_accuracy:g}"
                )
        if max_error_rate is not None and err_rate is not None and err_rate > max_error_rate:
            why.append(f"error rate {err_rate:.1%} is above --max-error-rate {max_error_rate:.1%}")
        slo = summary.get("slo_run") if summary else None
        if isinstance(slo, dict) and not slo.get("met", True):
            missed = [c.get("slo") or "?" for c in slo.get("checks", []) if not c.get("met")]
            why.append("misses --slo " + ", ".join(str(m) for m in missed))
        if not math.isfinite(points[k]):
            why.append(f"no {obj.label} (no request it counts)")
        col = arrays[k]

        def med(c: int, a: np.ndarray = col) -> float | None:
            v = a[:, c][np.isfinite(a[:, c])]
            return float(np.median(v)) if v.size else None

        cost_total, n_correct = float(np.nansum(col[:, COST])), float(np.nansum(col[:, CORRECT]))
        endpoints.append({
            "name": name,
            "url": endpoint_of(meta),
            "model": meta.get("model"),
            "folder": str(run.path),
            "requests": total,
            "errors": errors,
            "error_rate": err_rate,
            "graded": graded,
            "correct": correct,
            "accuracy": correct / graded if graded else None,
            "accuracy_ci95": None if acc_ci is None else list(acc_ci),
            "objective": points[k] if math.isfinite(points[k]) else None,
            "objective_ci95": _ci(reps[:, k]),
            "ttft_p50_s": med(TTFT),
            "e2e_p50_s": med(E2E),
            "user_tps_p50": med(USER_TPS),
            "cost_per_correct": cost_total / n_correct if n_correct and np.isfinite(col[:, COST]).any() else None,
            "eligible": not why,
            "why_not_eligible": why,
        })  # fmt: skip

    sign = 1.0 if obj.lower_is_better else -1.0
    pairs: list[dict[str, Any]] = []
    diffs: list[np.ndarray] = []
    for i in range(len(sides)):
        for j in range(i + 1, len(sides)):
            d = reps[:, j] - reps[:, i]
            ci = _ci(d)
            diff = points[j] - points[i] if math.isfinite(points[j] - points[i]) else None
            pairs.append({
                "a": sides[i][0], "b": sides[j][0], "diff": diff, "ci95": ci, "p": bootstrap_p(d) if ci else None,
                "accuracy": _accuracy_pair(rows[i], rows[j], shared),
            })  # fmt: skip
            diffs.append(d)
    eligible = [k for k, e in enumerate(endpoints) if e["eligible"]]
    holm(pairs, diffs, {sides[k][0] for k in eligible})
    better: dict[int, set[int]] = {k: set() for k in range(len(sides))}
    index = {name: k for k, (name, _) in enumerate(sides)}
    for pair in pairs:
        if pair["significant"] and pair["diff"] is not None:
            i, j = index[pair["a"]], index[pair["b"]]
            winner, loser = (i, j) if sign * pair["diff"] > 0 else (j, i)
            better[loser].add(winner)
    for k in eligible:
        endpoints[k]["rank"] = 1 + sum(1 for m in better[k] if m in eligible)
    for e in endpoints:
        e.setdefault("rank", None)
    _pareto(endpoints)

    def place(k: int) -> tuple[bool, int, float]:
        point = sign * points[k] if math.isfinite(points[k]) else math.inf
        return endpoints[k]["rank"] is None, endpoints[k]["rank"] or 0, point

    order = sorted(range(len(endpoints)), key=place)
    result = {
        "objective": {"name": obj.name, "label": obj.label, "unit": obj.unit, "lower_is_better": obj.lower_is_better},
        "constraints": {"min_accuracy": min_accuracy, "max_error_rate": max_error_rate},
        "items": len(shared),
        "resamples": resamples,
        "block": block,
        "seed": seed,
        "endpoints": [endpoints[k] for k in order],
        "pairs": pairs,
    }
    result["lines"] = verdict_lines(result)
    return result


Rows = dict[tuple[str, int], list[float]]

ALPHA = 0.05


def bootstrap_p(d: np.ndarray) -> float:
    """The bootstrap's two-sided p-value of a difference: twice the share of replicates on the
    far side of 0 (what orders the pairs for Holm's steps)."""
    finite = d[np.isfinite(d)]
    return float(min(1.0, 2 * min(np.mean(finite <= 0), np.mean(finite >= 0))))


def holm(pairs: list[dict[str, Any]], diffs: list[np.ndarray], eligible: set[str]) -> None:
    """Sets each pair's `significant` and `level`. The pairs of eligible endpoints, which decide the
    ranks, are one family under Holm's step-down (Holm 1979): in the order of their bootstrap
    p-values, the k-th of m is significant when its percentile interval at level 1 − 0.05/(m − k)
    leaves out 0, and the steps stop at the first that is not; so the chance of any false split
    among alike endpoints stays at most 5% however many are ranked. With two endpoints it is the 95%
    interval. A pair with an ineligible endpoint is read at 95% on its own (it ranks nothing)."""
    family = [k for k, p in enumerate(pairs) if p["a"] in eligible and p["b"] in eligible and p["ci95"]]
    for p in pairs:
        p["level"], p["significant"] = 1 - ALPHA, p["ci95"] is not None and (p["ci95"][0] > 0 or p["ci95"][1] < 0)
    stopped = False
    for step, k in enumerate(sorted(family, key=lambda k: pairs[k]["p"])):
        alpha = ALPHA / (len(family) - step)
        finite = diffs[k][np.isfinite(diffs[k])]
        lo, hi = np.percentile(finite, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        stopped = stopped or not (lo > 0 or hi < 0)
        pairs[k]["level"], pairs[k]["significant"] = 1 - alpha, not stopped


def _accuracy_pair(a: Rows, b: Rows, shared: list[tuple[str, int]]) -> dict[str, Any] | None:
    """McNemar's exact test and the Bonett-Price interval of b − a accuracy over items both graded."""
    pairs = ((a[k][CORRECT], b[k][CORRECT]) for k in shared)
    both = [(x, y) for x, y in pairs if not math.isnan(x) and not math.isnan(y)]
    if not both:
        return None
    only_a = sum(1 for x, y in both if x and not y)
    only_b = sum(1 for x, y in both if y and not x)
    n = len(both)
    p = mcnemar_exact_p(only_a, only_b)
    ci = paired_interval(only_a, only_b, n)
    return {
        "pairs": n, "a": sum(x for x, _ in both) / n, "b": sum(y for _, y in both) / n, "diff": (only_b - only_a) / n,
        "ci95": None if ci is None else list(ci), "mcnemar_p": p, "significant": p < 0.05,
    }  # fmt: skip


def _pareto(endpoints: list[dict[str, Any]]) -> None:
    """Marks the Pareto front of accuracy (higher), speed (E2E p50, lower) and cost per correct
    response (lower), over the figures every endpoint has."""
    dims: list[tuple[str, float]] = [("e2e_p50_s", 1.0)]
    if all(e["accuracy"] is not None for e in endpoints):
        dims.append(("accuracy", -1.0))
    if all(e["cost_per_correct"] is not None for e in endpoints):
        dims.append(("cost_per_correct", 1.0))
    vals = [[s * e[key] if e[key] is not None else math.inf for key, s in dims] for e in endpoints]
    for k, e in enumerate(endpoints):
        e["pareto"] = not any(
            all(o <= v for o, v in zip(other, vals[k], strict=True))
            and any(o < v for o, v in zip(other, vals[k], strict=True))
            for m, other in enumerate(vals)
            if m != k
        )
    for e in endpoints:
        e.setdefault("pareto_dims", [key for key, _ in dims])


def fmt_value(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "s":
        return f"{value * 1e3:.1f} ms"
    if unit == "tok/s":
        return f"{value:.1f} tok/s"
    return f"{value:.4g}"


def fmt_diff(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:+.1f} ms" if unit == "s" else f"{value:+.4g}"


def verdict_lines(result: dict[str, Any]) -> list[str]:
    """The verdict in sentences: the ranking, why each ineligible endpoint is out, and the
    like-for-like lines (a faster endpoint that answers worse, or serves another model, is never
    reported as simply faster)."""
    obj = result["objective"]
    unit = obj["unit"]
    eps = {e["name"]: e for e in result["endpoints"]}
    lines: list[str] = []
    ranked = [e for e in result["endpoints"] if e["rank"] is not None]
    for e in ranked:
        lines.append(f"rank {e['rank']}: {e['name']} ({obj['label']} {fmt_value(e['objective'], unit)})")
    for p in result["pairs"]:
        a, b = eps[p["a"]], eps[p["b"]]
        if a["rank"] is None or b["rank"] is None or p["diff"] is None or p["ci95"] is None:
            continue
        lo, hi = p["ci95"]
        tag = "significant" if p["significant"] else "not significant: they share a rank"
        lines.append(
            f"{p['b']} − {p['a']} {obj['label']}: {fmt_diff(p['diff'], unit)} "
            f"[{fmt_diff(lo, unit)}, {fmt_diff(hi, unit)}] ({tag})"
        )
    for e in result["endpoints"]:
        if not e["eligible"]:
            lines.append(f"{e['name']} is not eligible: " + "; ".join(e["why_not_eligible"]))
    sign = 1.0 if obj["lower_is_better"] else -1.0
    for p in result["pairs"]:
        a, b = eps[p["a"]], eps[p["b"]]
        acc = p["accuracy"]
        if a["model"] and b["model"] and a["model"] != b["model"]:
            lines.append(
                f"{a['name']} and {b['name']} serve different models ({a['model']}, {b['model']}): "
                "their speeds are not a like-for-like comparison"
            )
        if acc is None or not acc["significant"]:
            continue
        worse, better_ = (a, b) if acc["diff"] > 0 else (b, a)
        w_acc, b_acc = (acc["a"], acc["b"]) if worse is a else (acc["b"], acc["a"])
        # "Not slower": the worse-answering endpoint's objective is not significantly worse.
        d = p["diff"] if worse is b else (None if p["diff"] is None else -p["diff"])
        slower = p["significant"] and d is not None and sign * d > 0
        lead = "accuracy: " if slower else f"{worse['name']} is not slower than {better_['name']} but answers worse: "
        lines.append(
            f"{lead}{worse['name']} {w_acc:.3f} < {better_['name']} {b_acc:.3f} (McNemar p={acc['mcnemar_p']:.2g})"
        )
    return lines
