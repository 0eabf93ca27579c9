"""`pytps calibrate` records itself in the results store (pytps.store.store): one row per transport
measured, with the calibration's headline figures, so how exact pytps is on a host can be trended
like any endpoint. Like a run, a store that fails costs one warning, never the calibration."""

from __future__ import annotations

import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.store.run_entry import record_in_store


def calibration_figures(cells: list[dict[str, Any]]) -> dict[str, float]:
    """The worst p99 stamp delay of the cells, their median CPU per token, the share that passed."""
    figs = [c["figures"] for c in cells]
    out: dict[str, float] = {}
    delays = [f["stamp_delay_p99_us"] for f in figs if isinstance(f.get("stamp_delay_p99_us"), (int, float))]
    cpu = [f["cpu_us_per_token"] for f in figs if isinstance(f.get("cpu_us_per_token"), (int, float))]
    if delays:
        out["stamp_delay_p99_us"] = float(max(delays))
    if cpu:
        out["cpu_us_per_token"] = float(statistics.median(cpu))
    if figs:
        out["cells_passed_share"] = sum(1 for f in figs if f.get("passed")) / len(figs)
    return out


def record_calibration(data: dict[str, Any], store: str | None, fallback: Path) -> None:
    """One row per client of the calibration (data: what run_calibration returns). The row's folder
    is the transport's saved envelope, else `fallback` (the --json file, or the working directory)."""
    saved = data.get("envelopes") or {}
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for client in data.get("clients") or []:
        cells = [c for c in data.get("cells") or [] if c.get("client") == client]
        if not cells:
            continue
        metadata = {
            "date_utc": when,
            "endpoint": "emulator://127.0.0.1",  # the built-in emulator, on loopback
            "model": f"calibrate/{client}",
            "api": "calibrate",
            "transport": client,
            "pytps_version": data.get("pytps_version"),
            "client": {"host": data.get("host")},
            "workload": {"kind": "calibrate", "ladder": data.get("ladder"), "thresholds": data.get("thresholds")},
            "interrupted": data.get("interrupted"),
        }
        record_in_store(
            store, {"metadata": metadata, "summary": None}, Path(saved.get(client) or fallback), "calibrate",
            figures=calibration_figures(cells),
        )  # fmt: skip
