"""The results store backends every store test runs on: SQLite always, and PostgreSQL when
PYTPS_TEST_POSTGRES_URL names a server (.ci/steps/55-postgres.sh starts one on 127.0.0.1). Each test
gets a store of its own: a new SQLite file, or a new PostgreSQL database, dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

POSTGRES_ENV = "PYTPS_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", *(["postgresql"] if os.environ.get(POSTGRES_ENV) else [])]


def _postgres_db() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    admin = os.environ[POSTGRES_ENV]
    name = "pytps_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    u = urlsplit(admin)
    try:
        yield urlunsplit(u._replace(path="/" + name))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def store_spec_for(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "store" / "history.sqlite")
    else:
        yield from _postgres_db()


@pytest.fixture(params=BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store on each backend: a SQLite path or a postgresql:// URL."""
    yield from store_spec_for(request.param, tmp_path)
