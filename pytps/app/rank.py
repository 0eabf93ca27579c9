"""`pytps rank` and `pytps.rank()` (docs/rank.md): one workload against several endpoints,
interleaved in time (app/rank_runs), the verdict of each round (report/rank), and, with `every`
and `for_s`, rounds on a schedule, each recorded in the results store (kind "rank") and in
rank.json, which an interrupted monitor resumes from."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.app.rank_runs import EndpointSpec, check_names, choose_interleave, round_configs, run_round
from pytps.errors import ConfigError, read_json_if_any

RANK_FILE = "rank.json"
RANK_SCHEMA_VERSION = 1


@dataclass
class RankSettings:
    """What a rank asks: the verdict's objective and constraints, the interleaving, the schedule."""

    objective: str | None = None  # None: time to a correct answer when graded, else E2E p50
    min_accuracy: float | None = None
    max_error_rate: float | None = None
    interleave: str = "auto"
    blocks: int = 8
    every_s: float | None = None
    for_s: float | None = None
    resume: bool = False
    resamples: int = 2000
    seed: int = 0
    store: str | None = None  # None: $PYTPS_STORE or the default; "" : not recorded
    record: bool = True

    def rounds(self) -> int:
        if self.every_s is None and self.for_s is None:
            return 1
        if self.every_s is None or self.for_s is None or self.every_s <= 0 or self.for_s <= 0:
            raise ConfigError("--every and --for go together, each a positive duration (e.g. --every 1h --for 72h)")
        return max(1, math.floor(self.for_s / self.every_s + 1e-9))

    def check(self) -> None:
        from pytps.report.rank import objective_named

        if self.objective is not None:
            objective_named(self.objective, True)
        if self.min_accuracy is not None and not 0.0 <= self.min_accuracy <= 1.0:
            raise ConfigError(f"--min-accuracy {self.min_accuracy}: a share within [0, 1], e.g. 0.85")
        if self.max_error_rate is not None and not 0.0 <= self.max_error_rate <= 1.0:
            raise ConfigError(f"--max-error-rate {self.max_error_rate}: a share within [0, 1], e.g. 0.05")
        if self.blocks < 1:
            raise ConfigError(f"--blocks {self.blocks}: at least 1")
        if self.resamples < 100:
            raise ConfigError(f"--resamples {self.resamples}: at least 100")
        self.rounds()


@dataclass
class RankResult:
    """What a rank returns: rank.json's content, and its folder."""

    folder: Path
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> dict[str, Any]:
        """The last round's verdict."""
        out: dict[str, Any] = self.data["rounds"][-1]["verdict"]
        return out


def parse_duration(text: str, flag: str) -> float:
    """`90`, `90s`, `15m`, `1h`, `3d` -> seconds."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    t = text.strip().lower()
    scale = units.get(t[-1:])
    try:
        value = float(t[:-1] if scale else t) * (scale or 1.0)
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: write a duration like 30s, 15m, 1h or 3d") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{flag} {text!r}: a positive duration")
    return value


def rank(
    endpoints: list[EndpointSpec],
    run_settings: dict[str, Any],
    settings: RankSettings,
    out: Path,
    *,
    say: Callable[[str], None] | None = None,
) -> RankResult:
    """Runs the rank (every round), writing out/rank.json after each; returns it."""
    from pytps.results.folder import write_json_atomic

    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    check_names(endpoints)
    settings.check()
    interleave = choose_interleave(settings.interleave, endpoints)
    run_settings = dict(run_settings)
    for key in ("out", "store", "max_error_rate"):
        run_settings.pop(key, None)  # the rank's own: its folder, its store rows, its constraint
    total = settings.rounds()
    monitor = total > 1 or settings.every_s is not None
    path = out / RANK_FILE
    if settings.resume:
        data = _resumed(path, endpoints)
    else:
        if path.exists() or (out.exists() and any(out.iterdir())):
            raise ConfigError(f"--out {out} already holds results: name a new folder, or --resume a monitor there")
        data = {
            "schema_version": RANK_SCHEMA_VERSION,
            "endpoints": [{"name": e.name, "url": e.url, **e.settings} for e in endpoints],
            "interleave": interleave,
            "settings": {k: v for k, v in vars(settings).items() if k not in ("resume", "store")},
            "rounds": [],
            "complete": False,
        }
    out.mkdir(parents=True, exist_ok=True)
    start = len(data["rounds"]) + 1
    if start > total:
        say(f"pytps rank: all {total} rounds are done in {out}")
    t0 = time.monotonic()
    for k in range(start, total + 1):
        due = t0 + (k - start) * (settings.every_s or 0.0)
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        folder = out / f"round-{k:03d}" if monitor else out
        if monitor and folder.exists():
            # A round the interruption cut short: kept aside (a measurement is never lost), run again.
            aside = next(folder.with_name(f"{folder.name}-interrupted-{n}") for n in range(1, 1 << 20)
                         if not folder.with_name(f"{folder.name}-interrupted-{n}").exists())  # fmt: skip
            folder.rename(aside)
            say(f"pytps rank: round {k} was cut short; what it measured is kept in {aside}")
        say(f"pytps rank: round {k}/{total}: {', '.join(e.name for e in endpoints)} ({interleave})")
        started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        data["rounds"].append(_one_round(endpoints, run_settings, settings, interleave, folder, k, started))
        data["over_rounds"] = over_rounds(data["rounds"], settings.seed)
        data["complete"] = k == total
        write_json_atomic(path, data)
    return RankResult(out, data)


def matrix_endpoints(config: str, overrides: dict[str, Any]) -> tuple[list[EndpointSpec], dict[str, Any]]:
    """The endpoints of a TOML matrix (`pytps rank -c FILE`) and its one workload's settings, with
    the flags given on the command line (overrides) over the file's."""
    from pytps.settings.table import TABLE
    from pytps.sweep.matrix import Matrix

    matrix = Matrix(config)
    if len({c.workload for c in matrix.cells}) != 1:
        raise ConfigError(f"{config}: pytps rank runs one workload: keep one [[workload]] table")
    own = TABLE.toml_keys("endpoint")
    workload = {k: v for k, v in matrix.cells[0].settings.items() if k not in own and not k.startswith("price_")}
    endpoints = [
        EndpointSpec(
            c.endpoint,
            c.base_url,
            {k: v for k, v in c.settings.items() if k in own or k.startswith("price_")},
            c.emulator,
        )
        for c in matrix.cells
    ]
    return endpoints, {**workload, **overrides}


def _resumed(path: Path, endpoints: list[EndpointSpec]) -> dict[str, Any]:
    data = read_json_if_any(path)
    if not isinstance(data, dict):
        raise ConfigError(f"--resume: no readable {path}: name the --out folder of the monitor to resume")
    names = [e["name"] for e in data.get("endpoints", [])]
    if names != [e.name for e in endpoints]:
        raise ConfigError(f"--resume: {path} ranks {', '.join(names)}; give the same endpoints to resume it")
    return data


def _one_round(
    endpoints: list[EndpointSpec],
    run_settings: dict[str, Any],
    settings: RankSettings,
    interleave: str,
    folder: Path,
    number: int,
    started: str,
) -> dict[str, Any]:
    from pytps.report.rank import verdict
    from pytps.results.folder import SavedResults, load_journal, load_results
    from pytps.runner.event_loop import run_coroutine

    with ExitStack() as stack:
        configs = round_configs(stack, endpoints, run_settings, folder)
        results = run_coroutine(run_round(configs, interleave, settings.blocks))
    if any(r.interrupted for r in results):
        raise KeyboardInterrupt
    sides = []
    for e, cfg in zip(endpoints, configs, strict=True):
        d = cfg.out_dir or folder / e.name
        sides.append((e.name, SavedResults(d, load_results(d), load_journal(d))))
    v = verdict(
        sides,
        objective=settings.objective,
        min_accuracy=settings.min_accuracy,
        max_error_rate=settings.max_error_rate,
        resamples=settings.resamples,
        seed=settings.seed + number,
    )
    if settings.record:
        _record(settings.store, sides, v)
    return {"round": number, "started_utc": started, "folder": str(folder), "verdict": v}


def _record(store: str | None, sides: list[tuple[str, Any]], v: dict[str, Any]) -> None:
    """Each endpoint's run of the round in the results store, kind "rank", with its rank figures."""
    from pytps.store.run_entry import record_in_store
    from pytps.store.store import figures_of

    by_name = {e["name"]: e for e in v["endpoints"]}
    for name, run in sides:
        e = by_name[name]
        figures = figures_of(run.summary)
        extra = {"rank": e["rank"], "accuracy": e["accuracy"], "rank_objective": e["objective"]}
        figures.update({k: float(x) for k, x in extra.items() if isinstance(x, (int, float))})
        record_in_store(store, run.results, run.path, "rank", figures=figures)


def over_rounds(rounds: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Each endpoint's objective and rank per round, and the objective's median over the rounds
    with its bootstrap 95% interval (the percentile bootstrap of compare and history)."""
    from pytps.measure.bootstrap import interval95

    out: dict[str, Any] = {}
    for r in rounds:
        for e in r["verdict"]["endpoints"]:
            row = out.setdefault(e["name"], {"objective": [], "rank": [], "accuracy": []})
            row["objective"].append(e["objective"])
            row["rank"].append(e["rank"])
            row["accuracy"].append(e["accuracy"])
    for row in out.values():
        values = [v for v in row["objective"] if isinstance(v, (int, float))]
        row["median"] = float(sorted(values)[len(values) // 2]) if len(values) % 2 else (
            float(sum(sorted(values)[len(values) // 2 - 1 : len(values) // 2 + 1]) / 2) if values else None
        )  # fmt: skip
        row["median_ci95"] = list(interval95(values, "p50", seed=seed)) if len(values) >= 2 else None
    return out
