"""A finished run records itself in the results store (pytps.store.store). The store never costs
the run: its folder is already written, and a store that cannot be opened or written (read-only,
locked past the timeout, a newer schema, no driver) gives one warning line and nothing else."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from pytps.errors import StoreError


def store_warning(reason: str, folder: Path | str | None) -> str:
    """The one line: what went wrong with the store, and that the measurement is safe."""
    kept = f"; its results folder {folder} is complete" if folder is not None else ""
    return f"pytps: warning: {reason}: this run was not recorded in the results store{kept}"


def record_in_store(
    spec: str | None,
    results: dict[str, Any],
    folder: Path,
    kind: str = "run",
    *,
    timeout_s: float | None = None,
    figures: dict[str, float] | None = None,
) -> int | None:
    """Records the run; its row id, None when it was there already or the store failed (warned)."""
    from pytps.store.backends import safe_url
    from pytps.store.store import Store, resolve_store

    where = resolve_store(spec)
    where = safe_url(where) if "://" in where else where
    try:
        with Store(spec, timeout_s=timeout_s) as store:
            return store.record(results, folder, kind=kind, figures=figures)
    except StoreError as exc:
        print(store_warning(str(exc), folder), file=sys.stderr)
    except sqlite3.Error as exc:  # mid-write (locked past the timeout, read-only): rolled back
        print(store_warning(f"results store {where}: {exc}", folder), file=sys.stderr)
    except Exception as exc:
        # The class only: another driver's message may quote a connection string.
        print(store_warning(f"results store {where}: {type(exc).__name__}", folder), file=sys.stderr)
    return None
