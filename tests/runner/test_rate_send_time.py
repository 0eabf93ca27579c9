"""Rate mode never sends a request before its scheduled time, on any transport: the event loop's
timers end up to a millisecond early under uvloop, and the asyncio transport once sent a request
154 µs before its t_sched against llama-server (tests/real_servers)."""

from __future__ import annotations

import pytest

import pytps
from pytps.results.folder import load_journal


@pytest.mark.parametrize("transport", ["native", "asyncio", "httpx"])
def test_no_request_is_sent_before_its_time(transport, tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        result = pytps.run(emu.base_url, transport=transport, requests=80, rate=400.0, output_tokens=2,
                           out=tmp_path / "r", progress=None)
    scheduled = [x for x in load_journal(result.out_dir) if x["t_sched_ns"] is not None]
    assert len(scheduled) == 79  # all but request 0, sent alone first
    early = [x["t_sched_ns"] - x["t_send_ns"] for x in scheduled if x["t_send_ns"] < x["t_sched_ns"]]
    assert early == [], f"sent early by {early} ns"
    assert result.summary["schedule_lag_s"]["count"] == 79


def test_no_request_of_a_scaled_run_is_sent_before_its_time(tmp_path):
    # Each worker paces its share of the one schedule through the same wait (runner.sleep_until_ns).
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        result = pytps.run(emu.base_url, workers=2, requests=80, rate=400.0, output_tokens=2, out=tmp_path / "r",
                           progress=None)
    scheduled = [x for x in load_journal(result.out_dir) if x["t_sched_ns"] is not None]
    assert len(scheduled) >= 78  # every worker sends its own first request alone
    early = [x["t_sched_ns"] - x["t_send_ns"] for x in scheduled if x["t_send_ns"] < x["t_sched_ns"]]
    assert early == [], f"sent early by {early} ns"
