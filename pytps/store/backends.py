"""The results store's two databases behind one small interface: SQLite (stdlib sqlite3, the default)
and PostgreSQL (psycopg 3, the `store` extra). The store writes one SQL dialect, the common subset of
both ("?" placeholders, ON CONFLICT, RETURNING); a backend translates what differs.

Why psycopg and not SQLAlchemy Core: the store is a dozen statements that both databases accept as
written; psycopg is the one driver PostgreSQL needs, while SQLAlchemy would add a large dependency
and a second layer of abstraction over them (docs/results.md, "The results store").
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from pytps.errors import StoreError

#: How long a writer waits for another to finish before the store gives up (and the run warns).
DEFAULT_BUSY_TIMEOUT_S = 30.0


class Database(Protocol):
    """One open connection. Statements run inside transaction(), which commits or rolls back whole."""

    name: str  # "sqlite" or "postgresql"
    where: str  # the file, or the URL without credentials: safe to print
    id_column: str  # the DDL of an auto-numbered primary key

    def transaction(self, write: bool = False, schema: bool = False) -> Any: ...  # a context manager
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def table_exists(self, name: str) -> bool: ...
    def integrity(self) -> str: ...
    def close(self) -> None: ...


def safe_url(url: str) -> str:
    """The URL without its userinfo and query: what may be printed or stored."""
    u = urlsplit(url)
    host = u.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{u.port}" if u.port else "")
    return urlunsplit((u.scheme, netloc, u.path, "", ""))


class SqliteDatabase:
    name = "sqlite"
    id_column = "INTEGER PRIMARY KEY AUTOINCREMENT"

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.where = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; transaction() says BEGIN itself.
            self._conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            # WAL: readers never block the writer, and a writer killed mid-transaction leaves the
            # last committed state. NORMAL syncs at checkpoints: a process crash loses nothing.
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreError(f"results store {path}: SQLite could not switch to WAL mode (got {mode})")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"results store {path} cannot be opened: {exc}") from None

    @contextmanager
    def transaction(self, write: bool = False, schema: bool = False) -> Iterator[None]:
        # IMMEDIATE takes the write lock at BEGIN, so two writers queue on the busy timeout
        # instead of one failing when it upgrades a read (SQLite's deadlock avoidance).
        self._conn.execute("BEGIN IMMEDIATE" if write or schema else "BEGIN")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self._conn.execute(sql, tuple(params)).fetchall())

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, [tuple(r) for r in rows])

    def table_exists(self, name: str) -> bool:
        return bool(self.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def integrity(self) -> str:
        rows = self.execute("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)

    def close(self) -> None:
        self._conn.close()


class PostgresDatabase:
    name = "postgresql"
    id_column = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"

    def __init__(self, url: str, timeout_s: float) -> None:
        self.where = safe_url(url)
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                f"results store {self.where}: PostgreSQL needs psycopg: pip install 'psycopg[binary]'"
            ) from None
        self._psycopg = psycopg
        try:
            # A lock held past the timeout fails the statement (the run then warns), as SQLite's busy timeout.
            self._conn = psycopg.connect(
                url,
                connect_timeout=max(1, int(timeout_s)),
                autocommit=True,
                options=f"-c lock_timeout={int(timeout_s * 1000)}",
            )
        except psycopg.Error as exc:
            # psycopg's message can quote the connection string: only the class and the safe URL.
            raise StoreError(f"results store {self.where} cannot be opened ({type(exc).__name__})") from None

    @contextmanager
    def transaction(self, write: bool = False, schema: bool = False) -> Iterator[None]:
        with self._conn.transaction():
            if schema:
                # Schema changes one process at a time (CREATE TABLE IF NOT EXISTS races otherwise).
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtext('pytps results store'))")
            yield

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        return list(cur.fetchall()) if cur.description is not None else []

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])

    def table_exists(self, name: str) -> bool:
        return bool(self.execute("SELECT to_regclass(?) IS NOT NULL", (name,))[0][0])

    def integrity(self) -> str:
        # PostgreSQL keeps its own pages consistent (WAL); what the store can check is its references.
        orphans = self.execute("SELECT count(*) FROM figures f LEFT JOIN runs r ON r.id = f.run_id WHERE r.id IS NULL")
        return "ok" if orphans[0][0] == 0 else f"{orphans[0][0]} figures without a run"

    def close(self) -> None:
        self._conn.close()


def open_database(spec: str, timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> Database:
    """A path is a SQLite file; a URL names its backend (sqlite:///PATH, postgresql://...)."""
    if "://" not in spec:
        return SqliteDatabase(Path(os.path.expanduser(spec)), timeout_s)
    scheme = spec.split("://", 1)[0].lower()
    if scheme == "sqlite":
        # As SQLAlchemy writes them: sqlite:///relative.sqlite, sqlite:////absolute/path.sqlite.
        if not spec.startswith("sqlite:///") or len(spec) == len("sqlite:///"):
            raise StoreError(f"results store {spec!r}: write a SQLite URL as sqlite:///FILE (sqlite:////abs/FILE)")
        return SqliteDatabase(Path(spec[len("sqlite:///") :]), timeout_s)
    if scheme in ("postgresql", "postgres"):
        return PostgresDatabase(spec, timeout_s)
    raise StoreError(
        f"results store {safe_url(spec)!r}: unknown backend {scheme!r}; give a file path, sqlite:///PATH or postgresql://..."
    )
