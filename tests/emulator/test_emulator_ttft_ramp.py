"""The planted drift (docs/emulator.md): ttft_ramp_ms_per_s adds that many ms to a request's TTFT
per second since the emulator started, counted at the request's receipt."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import pytps


def test_the_ttft_ramp_grows_with_the_time_since_start(tmp_path: Path) -> None:
    with pytps.Emulator(ttft_ms=1, itl_us=50, ttft_ramp_ms_per_s=500, default_output_tokens=2) as emu:
        started = time.monotonic()
        time.sleep(0.3)
        result = pytps.run(emu.base_url, model="m", requests=1, output_tokens=2, store=False, out=tmp_path / "r")
        ttft_s = result.summary["ttft_s"]["p50"]
        elapsed = time.monotonic() - started
    # Received at least 0.3 s after start: at least 150 ms of ramp, and no more than the time it took.
    assert 0.150 <= ttft_s <= 0.001 + 0.5 * elapsed + 0.05, (ttft_s, elapsed)


def test_a_negative_ramp_is_refused() -> None:
    with pytest.raises(ValueError, match="ttft_ramp_ms_per_s"):
        pytps.Emulator(ttft_ramp_ms_per_s=-1)
