"""A results store of nightly runs against the emulator with one planted regression, for the trend
page's tests (tests/report/test_history_page.py, the browser tier) and tools/history_png.py (the
picture in docs/history.md): `NIGHTS` runs at TTFT 50 ms, the run of night `PLANTED` at 60 ms
(+20%), recorded with the store's clock injected (a night apart, 02:00 UTC)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytps
from pytps.results.folder import load_results
from pytps.store.store import Store

START = datetime(2026, 11, 1, 2, 0, tzinfo=timezone.utc)
NIGHTS = 10
PLANTED = 7
BASE_TTFT_MS = 50.0


def plant(root: Path, nights: int = NIGHTS, planted: int = PLANTED) -> tuple[str, int]:
    """(the store's path, the planted run's id)."""
    spec = str(root / "history.sqlite")
    planted_id = -1
    with Store(spec) as store:
        for night in range(nights):
            ttft = BASE_TTFT_MS * (1.2 if night == planted else 1.0)
            out = root / f"night{night:02d}"
            with pytps.Emulator(ttft_ms=ttft, ttft_dist="normal", ttft_sd_ms=3.0, itl_us=1000, seed=night) as emu:
                pytps.run(emu.base_url, model="bench-model", out=out, requests=40, concurrency=8, output_tokens=16,
                          input_tokens=32, seed=night, store=False)  # fmt: skip
            results = load_results(out)
            results["metadata"]["endpoint"]["port"] = 8000  # one endpoint: each emulator has a port of its own
            store.clock = lambda night=night: START + timedelta(days=night)  # type: ignore[misc]
            run_id = store.record(results, out)
            if night == planted:
                planted_id = int(run_id)  # type: ignore[arg-type]
    return spec, planted_id
