"""`pytps history`: what the results store says over time (docs/history.md). Groups of comparable
runs (endpoint, model, workload fingerprint), each metric's trend with the change against the
previous comparable run and against the baseline, and the regression check: the latest run against
its comparable predecessors with the bootstrap interval `pytps compare` uses, so noise is not a
regression. Reads the store and the saved folders only, as every report."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytps.errors import ConfigError
from pytps.measure.bootstrap import resample
from pytps.measure.catalogue import of_figure
from pytps.report.compare import bootstrap_diff, load_run
from pytps.report.verdicts import change_class
from pytps.results.files import JOURNAL
from pytps.store.store import CALIBRATION_FIGURES, DISTRIBUTIONS, SCALARS, STATS, StoredRun
from pytps.store.voice_entry import VOICE_FIGURE_NAMES

SPARKS = "▁▂▃▄▅▆▇█"
DEFAULT_METRICS = ("ttft_p50", "tpot_p50", "decode_tps_p50", "output_throughput_tps")
#: The word each verdict's class gets on the console (Finding.status).
STATUS_WORDS = {"regression": "REGRESSION", "improvement": "improvement:", "ok": "ok:", "note": "note:"}
#: The fewest bootstrap resamples the check takes: with fewer, the 2.5th and 97.5th percentiles
#: are one or two draws, and an interval can leave out its own estimate.
MIN_RESAMPLES = 100
#: How many comparable runs before the latest the check compares it with.
DEFAULT_WINDOW = 5


# ---- metric names ----------------------------------------------------------------------------


def known_metrics() -> list[str]:
    common = [f"{name}_{stat}" for name in DISTRIBUTIONS for stat in STATS] + list(SCALARS) + list(CALIBRATION_FIGURES)
    return common + [n for n in VOICE_FIGURE_NAMES if n not in common]


def check_metric(name: str) -> str:
    if name not in known_metrics():
        raise ConfigError(f"unknown metric {name!r}; one of: {', '.join(known_metrics())}")
    return name


def parse_metrics(text: str | None) -> list[str]:
    if not text:
        return list(DEFAULT_METRICS)
    return [check_metric(m.strip()) for m in text.split(",") if m.strip()]


def higher_is_better(metric: str) -> bool:
    """Speeds, throughputs and shares grow when the endpoint gets better; times and errors shrink
    (the catalogue's `better`; a figure with none, a count, is taken as higher-is-better)."""
    m = of_figure(metric)
    return m is None or m.better != "lower"


def unit_of(metric: str) -> tuple[float, str]:
    """(display scale, unit), from the catalogue (a figure it does not hold: as stored, no unit)."""
    m = of_figure(metric)
    return (m.scale, m.unit) if m is not None else (1.0, "")


def fmt_value(metric: str, value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    scale, unit = unit_of(metric)
    v = value * scale
    text = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return f"{text} {unit}".rstrip()


def fmt_change(rel: float | None) -> str:
    return "-" if rel is None or not math.isfinite(rel) else f"{rel * 100:+.1f}%"


def sparkline(values: Sequence[float | None]) -> str:
    """One block per value, scaled between the series' min and max (a space for a missing one)."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return ""
    lo, hi = min(present), max(present)
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(" ")
        elif hi == lo:
            out.append(SPARKS[len(SPARKS) // 2])
        else:
            out.append(SPARKS[round((v - lo) / (hi - lo) * (len(SPARKS) - 1))])
    return "".join(out)


# ---- groups and trends -----------------------------------------------------------------------


@dataclass
class Group:
    """Comparable runs: one endpoint, one model, one workload fingerprint, oldest first."""

    endpoint: str
    model: str
    fingerprint: str
    runs: list[StoredRun] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.endpoint, self.model, self.fingerprint)

    def describe(self) -> str:
        return describe_comparable(self.runs[-1].comparable)


def describe_comparable(c: dict[str, Any]) -> str:
    """A group's workload in a few words, from the fingerprinted settings."""
    wl, load = c.get("workload") or {}, c.get("load") or {}
    kind = wl.get("kind", "?")
    if kind in ("synthetic", "sessions"):
        what = f"input {wl.get('input_tokens')} tok, output {wl.get('output_tokens')} tok"
    elif kind == "dataset":
        what = f"dataset {wl.get('source')}"
    elif kind == "trace":
        what = f"trace {(wl.get('trace') or {}).get('path')}"
    else:
        what = kind
    level = {"concurrency": f"concurrency {load.get('concurrency')}", "rate": f"rate {load.get('rate_rps')}/s"}
    parts = [c.get("api"), what, level.get(str(load.get("mode")))]
    return ", ".join(str(p) for p in parts if p)


def group_runs(runs: Iterable[StoredRun]) -> list[Group]:
    """Groups in the order of their latest run, most recent first."""
    groups: dict[tuple[str, str, str], Group] = {}
    for run in runs:
        key = (run.endpoint, run.model, run.fingerprint)
        groups.setdefault(key, Group(*key)).runs.append(run)
    return sorted(groups.values(), key=lambda g: (g.runs[-1].when_utc, g.runs[-1].id), reverse=True)


def pick_baseline(group: Group, baseline: int | None) -> StoredRun:
    if baseline is None:
        return group.runs[0]
    for run in group.runs:
        if run.id == baseline:
            return run
    raise ConfigError(
        f"--baseline {baseline}: no run with that id among the {len(group.runs)} comparable runs shown; "
        "pick one from the `id` column of pytps history"
    )


def trend(
    group: Group,
    metrics: Sequence[str],
    baseline: int | None = None,
    checks: dict[int, dict[str, Finding]] | None = None,
) -> dict[str, Any]:
    """Each metric's values over the group's runs, with the change against the previous run and the
    baseline (JSON-able; `pytps history --json`); with `checks` (check_each_run's), each point's
    verdict as `check`: {status, verdict}."""
    base = pick_baseline(group, baseline)
    out: dict[str, Any] = {
        "endpoint": group.endpoint,
        "model": group.model,
        "fingerprint": group.fingerprint,
        "workload": group.runs[-1].comparable,
        "baseline": base.id,
        "metrics": {},
    }
    for metric in metrics:
        points = []
        prev: float | None = None
        b = base.figures.get(metric)
        for run in group.runs:
            v = run.figures.get(metric)
            points.append(
                {
                    "id": run.id,
                    "when_utc": run.as_dict()["when_utc"],
                    "kind": run.kind,
                    "status": run.status,
                    "value": v,
                    "change_vs_previous": v / prev - 1 if v is not None and prev else None,
                    "change_vs_baseline": v / b - 1 if v is not None and b else None,
                    "folder": run.folder,
                }
            )
            found = (checks or {}).get(run.id, {}).get(metric)
            if found is not None:
                points[-1]["check"] = {"status": found.status, "verdict": found.verdict()}
            if v is not None:
                prev = v
        out["metrics"][metric] = {
            "higher_is_better": higher_is_better(metric),
            "sparkline": sparkline([p["value"] for p in points]),
            "points": points,
        }
    return out


# ---- the regression check --------------------------------------------------------------------


def parse_limit(text: str | float) -> float:
    """`10%`, `10` (percent) or `0.1` given as a float: the largest change allowed, as a fraction."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text) * (100.0 if 0 < float(text) < 1 else 1.0)
    else:
        raw = str(text).strip().removesuffix("%").strip()
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"max change {text!r}: write a percentage, e.g. 10%") from None
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"max change {text!r}: give a positive percentage, e.g. 10%")
    return value / 100.0


def load_limits(path: str) -> dict[str, float]:
    """A TOML file of per-metric limits: `[limits]` with `ttft_p50 = "10%"` (a bare table works too)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"--limits {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--limits {path}: not TOML ({exc})") from None
    table = data.get("limits", data)
    if not isinstance(table, dict) or not table:
        raise ConfigError(f'--limits {path}: give a [limits] table, e.g. ttft_p50 = "10%"')
    return {check_metric(k): parse_limit(v) for k, v in table.items()}


@dataclass
class Finding:
    """One metric of one group's latest run against its comparable predecessors."""

    metric: str
    group: Group
    latest: StoredRun
    against: list[StoredRun]
    value: float | None
    reference: float | None
    rel: float | None
    rel_ci95: tuple[float, float] | None
    significant: bool
    limit: float
    regression: bool
    note: str | None = None

    @property
    def status(self) -> str:
        """The verdict's class, the one the console's word and the HTML pages' colour come from:
        `regression` (worse beyond the limit, the interval leaving out no change), `improvement`
        (the same, for the better), `note` (not checked) or `ok`."""
        if self.note:
            return "note"
        if self.regression:
            return "regression"
        better = "higher" if higher_is_better(self.metric) else "lower"
        return change_class(self.rel, self.significant, better, self.limit)

    def verdict(self) -> str:
        """The finding in words, without the group: what the console line ends with and what the
        trend page's hover shows."""
        if self.note:
            return self.note
        ci = ""
        if self.rel_ci95 is not None:
            ci = f", 95% CI {fmt_change(self.rel_ci95[0])} … {fmt_change(self.rel_ci95[1])}"
        word = {"regression": "worse", "improvement": "better"}.get(self.status, "change")
        return (
            f"{fmt_value(self.metric, self.value)} against {fmt_value(self.metric, self.reference)} "
            f"over {len(self.against)} comparable runs ({fmt_change(self.rel)} {word}{ci}; limit "
            f"{self.limit * 100:g}%)"
        )

    def line(self) -> str:
        """The one line a regression (or a note) gets."""
        g = self.group
        return f"{self.metric} {g.endpoint} {g.model} [{g.fingerprint}] run {self.latest.id}: {self.verdict()}"

    def console_line(self) -> str:
        """`history check`'s line: the verdict's word, then the line."""
        return f"{STATUS_WORDS[self.status]} {self.line()}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "endpoint": self.group.endpoint,
            "model": self.group.model,
            "fingerprint": self.group.fingerprint,
            "latest": self.latest.id,
            "against": [r.id for r in self.against],
            "value": self.value,
            "reference": self.reference,
            "rel": self.rel,
            "rel_ci95": list(self.rel_ci95) if self.rel_ci95 else None,
            "significant": self.significant,
            "limit": self.limit,
            "regression": self.regression,
            "status": self.status,
            "note": self.note,
        }


def _request_metric(metric: str) -> tuple[str, str] | None:
    """(journal key, statistic) of a per-request metric, None for a run-level one."""
    for name, key in DISTRIBUTIONS.items():
        for stat in STATS:
            if metric == f"{name}_{stat}":
                return key, stat
    return None


def _has_journal(run: StoredRun) -> bool:
    return os.path.isfile(os.path.join(run.folder, JOURNAL))


def check_group(
    group: Group,
    limits: dict[str, float],
    *,
    window: int = DEFAULT_WINDOW,
    resamples: int = 2000,
    seed: int = 0,
    load: Callable[[str], Any] = load_run,
) -> list[Finding]:
    """The group's latest complete run against up to `window` complete runs before it (`load`
    reads a run folder's journal: the trend page passes a cached one)."""
    complete = [r for r in group.runs if r.status == "complete"]
    if len(complete) < 2:
        return []
    latest, before = complete[-1], complete[-1 - window : -1]
    out = []
    # One generator per group, drawn in a fixed order: the same store and seed, the same verdict.
    rng = np.random.default_rng(seed)
    for metric, limit in limits.items():
        worse = -1.0 if higher_is_better(metric) else 1.0
        spec = _request_metric(metric)
        if spec is not None:
            key, stat = spec
            usable = [r for r in before if _has_journal(r)]
            if not _has_journal(latest) or not usable:
                gone = "its folder" if not _has_journal(latest) else "the earlier runs' folders"
                out.append(_note(metric, group, latest, before, limit, f"not checked: {gone} no longer hold a journal"))
                continue
            base = [load(r.folder).values(key) for r in usable]
            base = [b for b in base if b.size]
            other = load(latest.folder).values(key)
            if not base or not other.size:
                out.append(_note(metric, group, latest, usable, limit, "not checked: no successful requests"))
                continue
            d = bootstrap_diff(base, [other], stat, resamples, rng)
            value, reference, rel, rel_ci, significant = d.other, d.base, d.rel, d.rel_ci95, d.significant
            against = usable
        else:
            prior = [r.figures[metric] for r in before if metric in r.figures]
            value = latest.figures.get(metric)
            if value is None or len(prior) < 2:
                out.append(_note(metric, group, latest, before, limit, "not checked: needs 2 earlier runs with it"))
                continue
            # A run-level figure has one value per run: the interval is of the earlier runs' mean
            # (runs resampled, as compare does for run-level figures), and the latest is outside it or not.
            reps = resample([np.asarray(prior, dtype=np.float64)], "mean", resamples, rng)
            lo, hi = (float(x) for x in np.percentile(reps, [2.5, 97.5]))
            reference = float(np.mean(prior))
            rel = value / reference - 1 if reference else None
            rel_ci = (value / hi - 1, value / lo - 1) if lo > 0 else None
            significant = not lo <= value <= hi
            against = [r for r in before if metric in r.figures]
        better = "lower" if worse > 0 else "higher"
        regression = change_class(rel, bool(significant), better, limit) == "regression"
        out.append(
            Finding(metric, group, latest, against, value, reference, rel, rel_ci, significant, limit, regression)
        )
    return out


def _note(metric: str, group: Group, latest: StoredRun, against: list[StoredRun], limit: float, note: str) -> Finding:
    return Finding(metric, group, latest, against, None, None, None, None, False, limit, False, note)


def check(
    groups: Sequence[Group],
    limits: dict[str, float],
    *,
    window: int = DEFAULT_WINDOW,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Finding]:
    if window < 1:
        raise ConfigError(f"--window {window}: compare with at least 1 earlier run")
    if resamples < MIN_RESAMPLES:
        raise ConfigError(f"--resamples {resamples}: give at least {MIN_RESAMPLES}")
    out: list[Finding] = []
    for group in groups:
        out.extend(check_group(group, limits, window=window, resamples=resamples, seed=seed))
    return out


def check_each_run(
    group: Group, limits: dict[str, float], *, only: set[int] | None = None, **options: Any
) -> dict[int, dict[str, Finding]]:
    """What `history check` said, or would have said, of each complete run when it was the latest:
    {run id: {metric: Finding}} (the trend page's marks). The same check_group, with the same
    `options` (window, resamples, seed), on each prefix of the group, so a run's mark on the page
    is the console's verdict on it. `only`: the runs to judge (the ones shown), each still against
    the runs before it."""
    cache: dict[str, Any] = {}

    def cached(folder: str) -> Any:
        if folder not in cache:
            cache[folder] = load_run(folder)
        return cache[folder]

    out: dict[int, dict[str, Finding]] = {}
    for i, run in enumerate(group.runs):
        if run.status != "complete" or (only is not None and run.id not in only):
            continue
        prefix = Group(group.endpoint, group.model, group.fingerprint, group.runs[: i + 1])
        findings = check_group(prefix, limits, load=cached, **options)
        if findings:
            out[run.id] = {f.metric: f for f in findings}
    return out
