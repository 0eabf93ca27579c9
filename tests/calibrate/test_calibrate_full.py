"""The calibrate_full tier (.ci/steps/48-calibrate.sh): `pytps calibrate --quick` as shipped, and
the full ladder over every transport with --baseline. Minutes, so not in the default run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.calibrate_full


def calibrate(*args: str, timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "pytps", "calibrate", *args], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ))  # fmt: skip
    return p, time.monotonic() - t0


def test_quick_as_shipped(tmp_path):
    p, took = calibrate("--quick", "--json", str(tmp_path / "q.json"), timeout=600)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "q.json").read_text())
    assert data["clients"] == ["native"] and data["cells"]
    print(f"pytps calibrate --quick took {took:.1f} s")  # the target: under 60 s (not asserted)


def test_full_ladder_with_baseline(tmp_path):
    p, took = calibrate("--baseline", "--json", str(tmp_path / "full.json"), timeout=3000)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "full.json").read_text())
    assert data["clients"] == ["native", "asyncio", "httpx", "httpx+json"]
    for who in data["clients"]:
        cells = [c for c in data["cells"] if c["client"] == who]
        # Every row starts at concurrency 1 (a row stops where the emulator or the client fell behind).
        rows = {(c["rate_tps"], c["tokens_per_event"]) for c in cells}
        assert len(rows) == 7, (who, rows)
        assert all(any(c["concurrency"] == 1 for c in cells if (c["rate_tps"], c["tokens_per_event"]) == r)
                   for r in rows)  # fmt: skip
    assert set(data["envelopes"]) == {"native", "asyncio", "httpx"}
    print(f"pytps calibrate --baseline took {took:.1f} s")
