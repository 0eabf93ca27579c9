"""A capacity search's verdicts, whatever its load axis (rate, concurrency, concurrent agents): one
probe's runs judged against the targets (`judge`), a load point run again compared with its earlier
result (`disagreement`), and the sentences that tell them (docs/metrics.md, "Capacity search").

Pure: it runs nothing and knows no axis; pytps.sweep.search places the probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytps.measure.bootstrap import interval95, point
from pytps.measure.saturation import CLIENT_LAG
from pytps.measure.slo import REQUEST_METRICS

#: A repeated load point disagrees with its earlier result when an interval of one lies wholly
#: outside the other's and the values differ by more than this share of the larger of them and the
#: limit: beyond both intervals, and by enough to move the answer.
UNSTABLE_SHARE = 0.10
#: A probe passes only on at least this many measured requests: the bootstrap interval of a handful
#: of values is as narrow as the handful (one ok request: an error rate of 0% [0%, 0%]).
MIN_REQUESTS = 20


@dataclass
class ProbeRun:
    """What a probe's run measured: per-request values of the measured requests (ok ones for the
    latency keys, every one for `ok`), whether it was past saturation, and its completion rate."""

    values: dict[str, list[float]]
    ok: list[bool]
    saturation: str | None
    completion_rps: float | None
    dir: str

    def median_ttft_s(self) -> float | None:
        ttft = self.values.get("ttft_s") or []
        return float(np.median(ttft)) if ttft else None


@dataclass
class Probe:
    load: float
    status: str  # pass, fail, undecided
    runs: list[ProbeRun]
    checks: list[dict[str, Any]]
    deciding: dict[str, Any] | None
    completion_rps: float | None
    seconds: float | None = None  # each run's sending time
    recheck: bool = False  # the load point run again at the end (search.recheck)

    def describe(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "status": self.status,
            "runs": len(self.runs),
            "seconds": self.seconds,
            "recheck": self.recheck,
            "dirs": [r.dir for r in self.runs],
            "checks": self.checks,
            "deciding": self.deciding,
            "completion_rps": self.completion_rps,
            "saturation": next((r.saturation for r in self.runs if r.saturation), None),
        }


def parse_targets(slo_run: dict[str, float]) -> list[tuple[str, str, str, float]]:
    """(target name, journal key, statistic, limit) per `--slo-run` entry."""
    out = []
    for key, limit in slo_run.items():
        name, stat = key.split(":")
        out.append((key, REQUEST_METRICS[name], stat, limit))
    return out


def judge(
    runs: Sequence[ProbeRun], slo_run: dict[str, float], max_error_rate: float
) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None]:
    """(status, checks, the deciding check) of a probe's runs, pooled. The error rate decides first:
    a server that fails requests is failing, whatever its queue does, and the answer names it."""
    checks: list[dict[str, Any]] = []
    ok = np.asarray([x for r in runs for x in r.ok], dtype=np.float64)
    if ok.size:
        errors = 1.0 - ok
        lo, hi = interval95(errors, "mean")
        verdict = "pass" if hi <= max_error_rate else "fail" if lo > max_error_rate else "undecided"
        checks.append({"target": "error_rate", "value": float(errors.mean()), "ci95": [lo, hi],
                       "limit": max_error_rate, "verdict": verdict})  # fmt: skip
    saturated = next((r.saturation for r in runs if r.saturation), None)
    if saturated and saturated.startswith(CLIENT_LAG):
        # The client fell behind its schedule: the load asked for was not offered, so this says
        # nothing of the server. Undecided: run again, and never counted as a pass.
        checks.append({"target": "client", "verdict": "undecided", "reason": saturated})
    elif saturated:
        checks.append({"target": "saturation", "verdict": "fail", "reason": saturated})
    for target, key, stat, limit in parse_targets(slo_run):
        values = [v for r in runs for v in r.values.get(key, [])]
        if not values:
            checks.append({"target": target, "value": None, "ci95": None, "limit": limit, "verdict": "fail",
                           "reason": "no request measured it"})  # fmt: skip
            continue
        value = point([np.asarray(values)], stat)
        lo, hi = interval95(values, stat)
        verdict = "pass" if hi <= limit else "fail" if lo > limit else "undecided"
        checks.append({"target": target, "value": value, "ci95": [lo, hi], "limit": limit, "verdict": verdict})
    failed = [c for c in checks if c["verdict"] == "fail"]
    if failed:
        return "fail", checks, failed[0]
    if ok.size < MIN_REQUESTS:  # too few to pass: undecided, so never counted as a pass
        reason = f"{ok.size} measured requests, fewer than the {MIN_REQUESTS} a pass needs"
        checks.append({"target": "requests", "value": int(ok.size), "limit": MIN_REQUESTS, "verdict": "undecided",
                       "reason": reason})  # fmt: skip
    if any(c["verdict"] == "undecided" for c in checks):
        return "undecided", checks, next(c for c in checks if c["verdict"] == "undecided")
    # Passing: the target nearest its limit decides how much room was left.
    limited = [c for c in checks if c.get("limit") and c.get("value") is not None]
    deciding = max(limited, key=lambda c: c["value"] / c["limit"], default=None)
    return "pass", checks, deciding


def disagreement(before: Probe, after: Probe) -> dict[str, Any] | None:
    """How a load point run again contradicts its earlier result, or None: a check whose intervals
    do not overlap and whose values differ by more than UNSTABLE_SHARE, or a pass now saturated."""
    earlier = {c["target"]: c for c in before.checks}
    for c in after.checks:
        b = earlier.get(c["target"])
        if b is None:
            if c["target"] == "saturation" and before.status == "pass":
                return {"target": "saturation", "before": None, "after": c["reason"]}
            continue
        if b.get("ci95") is None or c.get("ci95") is None:
            continue
        (blo, bhi), (alo, ahi) = b["ci95"], c["ci95"]
        apart = alo > bhi or ahi < blo
        # Against the limit too: a 2 ms TTFT that became 15 ms under a 500 ms target is the host's
        # jitter, not a server whose capacity moved.
        scale = max(abs(b["value"]), abs(c["value"]), abs(c.get("limit") or 0.0), 1e-12)
        if apart and abs(c["value"] - b["value"]) > UNSTABLE_SHARE * scale:
            return {"target": c["target"], "before": b, "after": c}
    return None


def describe_check(c: dict[str, Any] | None) -> str:
    if c is None:
        return "no target"
    if c["target"] == "saturation":
        return f"past saturation: {c['reason']}"
    if c["target"] == "client":
        return f"not the server's limit: {c['reason']}"
    if c["target"] == "requests":
        return str(c["reason"])
    if c.get("value") is None:
        return f"{c['target']}: {c.get('reason', 'not measured')}"
    if c["target"] == "error_rate":
        lo, hi = c["ci95"]
        return f"error rate {c['value']:.1%} [{lo:.1%}, {hi:.1%}] against {c['limit']:.1%}"
    lo, hi = c["ci95"]
    return (
        f"{c['target'].replace(':', ' ')} {c['value'] * 1e3:.3g} ms [{lo * 1e3:.3g}, {hi * 1e3:.3g}] "
        f"against {c['limit'] * 1e3:.3g} ms"
    )


def describe_disagreement(d: dict[str, Any]) -> str:
    """`the ttft p90 497 ms [480, 510], then 2.02e+03 ms [1.9e+03, 2.1e+03]`."""
    if d["target"] == "saturation":
        return f"it passed, then was past saturation ({d['after']})"

    def one(c: dict[str, Any]) -> str:
        lo, hi = c["ci95"]
        if c["target"] == "error_rate":
            return f"{c['value']:.1%} [{lo:.1%}, {hi:.1%}]"
        return f"{c['value'] * 1e3:.3g} ms [{lo * 1e3:.3g}, {hi * 1e3:.3g}]"

    name = "error rate" if d["target"] == "error_rate" else d["target"].replace(":", " ")
    return f"the {name} {one(d['before'])}, then {one(d['after'])}"
