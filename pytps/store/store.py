"""The results store: every run, sweep cell and calibration, one row each, in one place (SQLite by
default, PostgreSQL for a team), so runs can be trended and rechecked (docs/results.md, "The results
store"). It is an index and a trend source, not a copy: the raw events stay in the results folder,
whose path the row keeps.

A row holds when (UTC), the endpoint (URL without secrets), model, API, transport, pytps version,
host, the workload fingerprint (pytps.store.fingerprint: equal exactly when two runs are
comparable), the summary's figures (table `figures`, one row per figure) and the folder's path.
Headers and keys are never stored: the endpoint is rebuilt from results.json's parts, which never
held userinfo or a query.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.errors import StoreError
from pytps.store.backends import DEFAULT_BUSY_TIMEOUT_S, Database, open_database, safe_url
from pytps.store.fingerprint import comparable_fields, fingerprint_of

#: The store's schema version (docs/results.md); the code migrates older stores forward and refuses newer ones.
STORE_SCHEMA_VERSION = 1
STORE_ENV = "PYTPS_STORE"
#: Seconds a writer waits for the store's lock before giving up (default DEFAULT_BUSY_TIMEOUT_S).
TIMEOUT_ENV = "PYTPS_STORE_TIMEOUT_S"
#: The longest busy timeout taken: a day.
MAX_TIMEOUT_S = 86400.0
# agents: `pytps agents`, agents_search: its capacity search (docs/agents.md); voice: a voice run (docs/voice.md)
KINDS = ("run", "sweep_cell", "calibrate", "rank", "agents", "agents_search", "voice")

# Distributions of the summary kept in the store, by the name figures carry, and their statistics.
DISTRIBUTIONS = {
    "ttft": "ttft_s",
    "ttfat": "ttfat_s",
    "tpot": "tpot_s",
    "itl": "itl_s",
    "e2e": "e2e_s",
    "decode_tps": "decode_tps",
    "user_tps": "user_tps",
}
STATS = ("mean", "p50", "p90", "p99")
# Run-level figures kept as they are.
SCALARS = (
    "output_throughput_tps",
    "steady_output_throughput_tps",
    "request_throughput_rps",
    "goodput_rps",
    "goodput_tps",
    "useful_share",
    "error_rate",
    "requests_total",
    "requests_ok",
    "joules_per_output_token",  # runs with --server-metrics and an energy counter or power gauge
)
# A calibration's figures (pytps calibrate; its cells' worst stamp delay, CPU per token, cells passed).
CALIBRATION_FIGURES = ("stamp_delay_p99_us", "cpu_us_per_token", "cells_passed_share")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def default_store_path() -> Path:
    """$XDG_DATA_HOME/pytps/history.sqlite (~/.local/share when XDG_DATA_HOME is unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "pytps" / "history.sqlite"


def store_timeout_s(given: float | None = None) -> float:
    """The busy timeout: `given`, else $PYTPS_STORE_TIMEOUT_S, else 30 s; a finite number of
    seconds from 0 to MAX_TIMEOUT_S (nan, inf or 1e308 would reach SQLite's millisecond int)."""
    raw: Any = given
    if raw is None:
        raw = os.environ.get(TIMEOUT_ENV) or DEFAULT_BUSY_TIMEOUT_S
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= MAX_TIMEOUT_S):
        name = TIMEOUT_ENV if given is None else "the store's timeout"
        raise StoreError(f"{name}={raw!r}: give seconds from 0 to {MAX_TIMEOUT_S:g}, e.g. 30")
    return value


def resolve_store(spec: str | None = None) -> str:
    """Which store: the given spec (--store), else $PYTPS_STORE, else the default SQLite file."""
    return spec or os.environ.get(STORE_ENV) or str(default_store_path())


def figures_of(summary: dict[str, Any] | None) -> dict[str, float]:
    """The summary's figures the store keeps, by name (ttft_p50, decode_tps_p50, output_throughput_tps, …).
    Times are in seconds, speeds in tokens (or requests) per second, as in results.json."""
    out: dict[str, float] = {}
    if not summary:
        return out
    for name, key in DISTRIBUTIONS.items():
        dist = summary.get(key)
        if not isinstance(dist, dict) or not dist.get("count"):
            continue
        for stat in STATS:
            value = dist.get(stat)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{name}_{stat}"] = float(value)
    for key in SCALARS:
        value = summary.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def endpoint_of(metadata: dict[str, Any]) -> str:
    """scheme://host[:port][/path] from results.json's endpoint parts: never userinfo or a query."""
    ep = metadata.get("endpoint") or {}
    if isinstance(ep, str):  # a calibration's: already a URL
        return normalize_endpoint(ep)
    host = str(ep.get("host") or "")
    if ":" in host:
        host = f"[{host}]"
    port = f":{ep['port']}" if ep.get("port") else ""
    path = str(ep.get("path") or "/").rstrip("/")
    return f"{ep.get('scheme') or 'http'}://{host}{port}{path}"


def normalize_endpoint(url: str) -> str:
    """A user's --endpoint URL in the store's form: no userinfo, query, trailing "/" or "/v1"."""
    if "://" not in url:
        url = "http://" + url
    return safe_url(url).rstrip("/").removesuffix("/v1")


@dataclass
class StoredRun:
    """One row of the store, with its figures."""

    id: int
    when_utc: datetime
    kind: str
    endpoint: str
    model: str
    api: str
    transport: str
    pytps_version: str
    host: str
    fingerprint: str
    comparable: dict[str, Any]
    folder: str
    status: str
    figures: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["when_utc"] = self.when_utc.strftime(_TIME_FORMAT)
        return d


_COLUMNS = (
    "id, when_utc, kind, endpoint, model, api, transport, pytps_version, host, fingerprint, comparable, folder, status"
)


def _schema_v1(id_column: str) -> list[str]:
    return [
        "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"""CREATE TABLE IF NOT EXISTS runs (
            id {id_column},
            run_key TEXT NOT NULL UNIQUE,
            when_utc TEXT NOT NULL,
            kind TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            model TEXT NOT NULL,
            api TEXT NOT NULL,
            transport TEXT NOT NULL,
            pytps_version TEXT NOT NULL,
            host TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            comparable TEXT NOT NULL,
            folder TEXT NOT NULL,
            status TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS runs_by_setup ON runs (endpoint, model, fingerprint, when_utc)",
        """CREATE TABLE IF NOT EXISTS figures (
            run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_id, name)
        )""",
    ]


# Migration i takes a store at version i to i + 1 (version 0: an empty database). A new schema
# version appends one function here and bumps STORE_SCHEMA_VERSION.
def _create_v1(db: Database) -> None:
    for sql in _schema_v1(db.id_column):
        db.execute(sql)


MIGRATIONS: list[Callable[[Database], None]] = [_create_v1]


class Store:
    """An open results store. clock gives "now" in UTC (injected by tests to simulate a month)."""

    def __init__(
        self,
        spec: str | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        timeout_s: float | None = None,
        read_only: bool = False,
        must_exist: bool = False,
    ) -> None:
        """read_only: a SQLite store is opened read-only (history and its check only read: a store
        in a read-only folder can be read); must_exist: a missing store is an error, not a new one."""
        self.spec = resolve_store(spec)
        timeout_s = store_timeout_s(timeout_s)
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.db = open_database(self.spec, timeout_s, read_only=read_only, must_exist=must_exist)
        try:
            self._migrate()
        except StoreError:
            self.db.close()
            raise
        except Exception as exc:
            self.db.close()
            raise StoreError(f"results store {self.where}: {type(exc).__name__}: {exc}") from None

    @property
    def where(self) -> str:
        return self.db.where

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # ---- the schema -------------------------------------------------------------------------

    def schema_version(self) -> int:
        if not self.db.table_exists("store_meta"):
            return 0
        rows = self.db.execute("SELECT value FROM store_meta WHERE key = 'schema_version'")
        return int(rows[0][0]) if rows else 0

    def _migrate(self) -> None:
        if self._check_version() == STORE_SCHEMA_VERSION:
            return  # the common case: no write lock taken
        with self.db.transaction(schema=True):
            version = self._check_version()  # again, under the lock: another process may have migrated
            for step in MIGRATIONS[version:]:
                step(self.db)
            self.db.execute(
                "INSERT INTO store_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(STORE_SCHEMA_VERSION),),
            )

    def _check_version(self) -> int:
        version = self.schema_version()
        if version > STORE_SCHEMA_VERSION:
            raise StoreError(
                f"results store {self.where} has schema version {version}, newer than this pytps knows "
                f"({STORE_SCHEMA_VERSION}); upgrade pytps, or give another store with --store"
            )
        return version

    # ---- writing ----------------------------------------------------------------------------

    def record(
        self,
        results: dict[str, Any],
        folder: str | os.PathLike[str],
        *,
        kind: str = "run",
        when: datetime | None = None,
        figures: dict[str, float] | None = None,
    ) -> int | None:
        """Records a results.json (its metadata and summary) and the folder it lives in; the row's
        id, or None when that folder's run is already in the store. when: the store's clock unless
        given; figures: instead of the summary's (a calibration's)."""
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: one of {KINDS}")
        meta = results.get("metadata") or {}
        comparable = comparable_fields(meta)
        path = os.path.abspath(os.fspath(folder))
        started = str(meta.get("date_utc") or "")
        # The same folder's same run is one row, however often it is recorded or imported.
        run_key = hashlib.sha256(f"{path}\n{started}".encode()).hexdigest()
        stamp = (when or self.clock()).astimezone(timezone.utc).strftime(_TIME_FORMAT)
        status = "complete"
        if meta.get("interrupted"):
            status = "interrupted"
        elif meta.get("stopped_reason"):
            status = "stopped"
        elif results.get("summary") is None and figures is None:
            status = "unfinished"
        row = (
            run_key, stamp, kind, endpoint_of(meta), str(meta.get("model") or ""), str(meta.get("api") or ""),
            str(meta.get("transport") or ""), str(meta.get("pytps_version") or ""),
            str((meta.get("client") or {}).get("host") or ""), fingerprint_of(comparable),
            json.dumps(comparable, sort_keys=True, default=str), path, status,
        )  # fmt: skip
        if figures is None:
            figures = figures_of(results.get("summary"))
        with self._writing("record the run"), self.db.transaction(write=True):
            got = self.db.execute(
                "INSERT INTO runs (run_key, when_utc, kind, endpoint, model, api, transport, pytps_version, host, "
                "fingerprint, comparable, folder, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_key) DO NOTHING RETURNING id",
                row,
            )
            if not got:
                return None
            run_id = int(got[0][0])
            self.db.executemany(
                "INSERT INTO figures (run_id, name, value) VALUES (?, ?, ?)",
                [(run_id, name, value) for name, value in sorted(figures.items())],
            )
        return run_id

    def forget(self, ids: Iterable[int]) -> int:
        """Removes these rows (and their figures); how many were removed."""
        ids = list(ids)
        with self._writing("forget runs"), self.db.transaction(write=True):
            for run_id in ids:
                self.db.execute("DELETE FROM figures WHERE run_id = ?", (run_id,))
                self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return len(ids)

    @contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """A write the database refuses (a read-only file, a lock held past the timeout) as one
        StoreError line, rolled back. psycopg's errors by class only: its text can quote a URL."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"results store {self.where}: cannot {what}: {exc}") from None
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "psycopg":
                raise
            raise StoreError(f"results store {self.where}: cannot {what} ({type(exc).__name__})") from None

    # ---- reading ----------------------------------------------------------------------------

    def runs(
        self,
        *,
        endpoint: str | None = None,
        model: str | None = None,
        fingerprint: str | None = None,
        kinds: Sequence[str] | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[StoredRun]:
        """Matching rows, oldest first, each with its figures."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("endpoint", endpoint), ("model", model)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if fingerprint is not None:
            # A prefix is enough, as with git's commit ids.
            # LIKE's wildcards in what was typed are literal characters: `%` matches no run.
            where.append("fingerprint LIKE ? ESCAPE '!'")
            params.append(fingerprint.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%")
        if kinds:
            where.append("kind IN (" + ", ".join("?" for _ in kinds) + ")")
            params.extend(kinds)
        if ids is not None:
            if not ids:
                return []
            where.append("id IN (" + ", ".join("?" for _ in ids) + ")")
            params.extend(ids)
        sql = f"SELECT {_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY when_utc, id"
        with self.db.transaction():
            rows = self.db.execute(sql, params)
            out = [_stored(row) for row in rows]
            by_id = {r.id: r for r in out}
            if by_id:
                # Figures in one query for the lot, not one per run.
                fsql = "SELECT f.run_id, f.name, f.value FROM figures f JOIN runs r ON r.id = f.run_id"
                if where:
                    fsql += " WHERE " + " AND ".join(f"r.{w}" for w in where)
                for run_id, name, value in self.db.execute(fsql, params):
                    if run_id in by_id:
                        by_id[run_id].figures[name] = float(value)
        return out

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM runs")[0][0])

    def integrity(self) -> str:
        """ "ok", or what the database's own check found."""
        return self.db.integrity()


def _stored(row: Sequence[Any]) -> StoredRun:
    run = dict(zip(_COLUMNS.split(", "), row, strict=True))  # the columns are StoredRun's fields
    run["id"] = int(run["id"])
    run["when_utc"] = datetime.strptime(run["when_utc"], _TIME_FORMAT).replace(tzinfo=timezone.utc)
    run["comparable"] = json.loads(run["comparable"])
    return StoredRun(**run)


def parse_when(text: Any) -> datetime | None:
    """results.json's date_utc as an aware UTC datetime, or None."""
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
