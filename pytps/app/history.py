"""`pytps history` as jobs: the results store's runs grouped and trended (history), saved folders
imported (add), regressions flagged (check). The arithmetic is pytps.report.history's; the CLI and
the library's pytps.history(...) call these and print or read their outcomes (docs/history.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.results.files import RESULTS, SWEEP_INDEX

if TYPE_CHECKING:
    from pytps.report.history import Finding, Group
    from pytps.store.store import Store, StoredRun

#: The kinds of row trended and checked unless every kind is asked for.
RUN_KINDS = ("run", "rank", "voice")


@dataclass(frozen=True)
class Selection:
    """Which runs of which store: the filters `history` and `history check` share."""

    store: str | None = None  # a SQLite file or URL (None: $PYTPS_STORE, else the default file)
    endpoint: str | None = None  # only this endpoint (its base URL)
    model: str | None = None  # only this model
    fingerprint: str | None = None  # only this workload fingerprint (a prefix will do)

    @property
    def filtered(self) -> bool:
        return any((self.endpoint, self.model, self.fingerprint))


@dataclass(frozen=True)
class TrendPlan:
    """`pytps history`'s own settings."""

    metrics: str | None = None  # "M[,M...]" (None: the default metrics)
    baseline: int | None = None  # the run (its id) changes are measured against
    limit: int = 10  # the last N runs of each group
    all_kinds: bool = False  # also sweep cells and calibrations
    html: str | Path | None = None  # write the trend as one offline HTML page
    max_change: str | float = "10%"  # the HTML page's band of no change, and its check's limit
    relative: bool = False  # the HTML page plots the change against the baseline


@dataclass
class TrendOutcome:
    groups: list[Group]  # the groups, each holding its last `limit` runs
    trends: list[dict[str, Any]]  # one per group (`pytps history --json`)
    where: str  # the store read
    html: Path | None = None  # the page written, if asked for


@dataclass(frozen=True)
class CheckPlan:
    """`pytps history check`'s own settings: limits per metric (a file), or metrics and one limit."""

    metrics: str | None = None  # "M[,M...]" (default ttft_p50)
    max_change: str | float = "10%"  # the largest change for the worse allowed
    limits: str | None = None  # a TOML file of per-metric limits, instead of metrics and max_change
    window: int = 5  # earlier comparable runs to compare with
    seed: int = 0
    resamples: int = 2000


@dataclass
class AddOutcome:
    added: int
    known: int  # already in the store
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # unreadable folders, and why
    forgotten: int | None = None  # rows forgotten by prune (None: not asked)
    where: str = ""


def _open(where: Selection | str | None, *, read_only: bool = False, must_exist: bool = False) -> Store:
    from pytps.store.store import Store

    store = where.store if isinstance(where, Selection) else where
    return Store(store, read_only=read_only, must_exist=must_exist)


def _selected(selection: Selection, store: Store, kinds: tuple[str, ...] | None) -> list[Group]:
    from pytps.report.history import group_runs
    from pytps.store.store import normalize_endpoint

    runs = store.runs(
        endpoint=normalize_endpoint(selection.endpoint) if selection.endpoint else None,
        model=selection.model,
        fingerprint=selection.fingerprint,
        kinds=kinds,
    )
    return group_runs(runs)


def history(selection: Selection, plan: TrendPlan | None = None) -> TrendOutcome:
    """The selected runs grouped by endpoint, model and workload fingerprint, each metric's trend
    with its change against the previous comparable run and (when filtered) the baseline."""
    from pytps.errors import ConfigError
    from pytps.report.history import check_each_run, parse_limit, parse_metrics, trend

    plan = plan or TrendPlan()
    if plan.limit < 1:
        raise ConfigError(f"--limit {plan.limit}: show at least 1 run per group")
    metrics = parse_metrics(plan.metrics)
    with _open(selection, read_only=True) as store:
        groups = _selected(selection, store, None if plan.all_kinds else RUN_KINDS)
    if not groups:
        return TrendOutcome([], [], store.where)
    limit = parse_limit(plan.max_change)
    checks: list[Any] = [None] * len(groups)
    if plan.html:
        # Each run shown as history check judged it when it was the latest (against the runs before
        # it, shown or not): the page's marks.
        checks = [
            check_each_run(g, dict.fromkeys(metrics, limit), only={r.id for r in g.runs[-plan.limit :]}) for g in groups
        ]
    for g in groups:
        g.runs = g.runs[-plan.limit :]
    baseline = plan.baseline if selection.filtered else None
    trends = [trend(g, metrics, baseline, c) for g, c in zip(groups, checks, strict=True)]
    written = None
    if plan.html:
        from pytps.report.html_history import write_history

        written = write_history(trends, plan.html, limit=limit, relative=plan.relative)
    return TrendOutcome(groups, trends, store.where, written)


def check(selection: Selection, plan: CheckPlan | None = None) -> list[Finding]:
    """The latest complete run of each selected group against up to `window` comparable runs
    before it; a finding per metric and group (.regression marks a regression)."""
    from pytps.errors import ConfigError
    from pytps.report.history import MIN_RESAMPLES, load_limits, parse_limit, parse_metrics
    from pytps.report.history import check as check_groups

    plan = plan or CheckPlan()
    if plan.limits and plan.metrics:
        raise ConfigError("--limits FILE names the metrics and their limits: leave out --metric, or --limits")
    if plan.limits:
        limits = load_limits(plan.limits)
    else:
        limit = parse_limit(plan.max_change)
        limits = {m: limit for m in parse_metrics(plan.metrics or "ttft_p50")}
    if plan.resamples < MIN_RESAMPLES:
        raise ConfigError(
            f"--resamples {plan.resamples}: give at least {MIN_RESAMPLES} (2000 is the default; fewer cannot "
            "place a 95% interval's ends)"
        )
    # A check only reads; a store that is not there is a mistake (a typo would pass a CI gate).
    with _open(selection, read_only=True, must_exist=True) as store:
        groups = _selected(selection, store, RUN_KINDS)
    return check_groups(groups, limits, window=plan.window, resamples=plan.resamples, seed=plan.seed)


def add(dirs: Sequence[str | Path], *, prune: bool = False, store: str | None = None) -> AddOutcome:
    """Import saved results folders (each, or the folders found under it) into the store; with
    prune, forget the rows whose folders are gone."""
    from pytps.errors import ConfigError
    from pytps.results.folder import load_results
    from pytps.store.store import parse_when

    if not dirs and not prune:
        raise ConfigError("history add needs results folders (DIR...), or --prune to forget runs with folders gone")
    folders = _folders(dirs)
    outcome = AddOutcome(0, 0)
    with _open(store) as opened:
        for folder in folders:
            try:
                results = load_results(folder)
            except (OSError, ValueError) as exc:
                outcome.skipped.append((folder, f"results.json unreadable ({exc})"))
                continue
            meta = results.get("metadata") or {}
            when = parse_when(meta.get("date_utc")) or datetime.fromtimestamp(
                (folder / RESULTS).stat().st_mtime, timezone.utc
            )
            kind = "sweep_cell" if (folder.parent / SWEEP_INDEX).is_file() else "run"
            if opened.record(results, folder, kind=kind, when=when) is None:
                outcome.known += 1
            else:
                outcome.added += 1
        if prune:
            outcome.forgotten = opened.forget([r.id for r in opened.runs() if _gone(r)])
        outcome.where = opened.where
    return outcome


def _folders(dirs: Iterable[str | Path]) -> list[Path]:
    from pytps.errors import ConfigError

    out: list[Path] = []
    for d in dirs:
        p = Path(d)
        if (p / RESULTS).is_file():
            out.append(p)
        elif p.is_dir():
            out.extend(sorted(r.parent for r in p.rglob(RESULTS)))
        else:
            raise ConfigError(f"{d}: no such folder; give results folders (holding results.json) or folders of them")
    return out


def _gone(run: StoredRun) -> bool:
    """A row prune forgets: its folder (or a calibration's saved file) is no longer there, or a
    run's folder no longer holds its results.json (emptied, or another folder made in its place)."""
    path = Path(run.folder)
    if run.kind in ("run", "sweep_cell"):
        return not (path / RESULTS).is_file()
    return not path.exists()
