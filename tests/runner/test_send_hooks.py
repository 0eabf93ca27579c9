"""The Runner's send hooks (a share of the schedule, a start barrier, a stop), as a scale worker
uses them, against pytps.Emulator on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest

import pytps
from pytps._native import _core
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.runner.share import Share


def _run(emu, tmp_path, share: Share | None, start=None, **settings):
    cfg = make_config(emu.base_url, out=tmp_path / "out", output_tokens=2, input_tokens=8, **settings)
    runner = Runner(cfg, keep_records=True, share=share, start=start)
    return runner, asyncio.run(runner.run())


def test_whole_share_is_the_single_process_schedule():
    plan = make_config("http://127.0.0.1:9", requests=5, warmup=2, concurrency=3).plan
    share = Share.whole(plan)
    assert (share.probe_index, share.slots, share.end) == (0, 3, 7)
    assert list(share.indices()) == [1, 2, 3, 4, 5, 6]
    rate = make_config("http://127.0.0.1:9", requests=3, rate=10.0, max_concurrency=4).plan
    whole = Share.whole(rate)
    assert whole.slots == 4
    assert [i for i, _ in whole.scheduled(iter([0, 1, 2, 3, 4]))] == [1, 2]


@pytest.mark.parametrize("load", [{"concurrency": 2}, {"rate": 500.0}])
def test_a_share_sends_its_indexes_after_the_barrier(tmp_path, load):
    # Worker 1 of 2 over requests 0..9: its probe is 1, then 3, 5, 7, 9.
    share = Share(worker=1, workers=2, first=0, end=10, warmup=0, slots=1)
    leads: list[int] = []
    t0s: list[int] = []

    async def start(lead_ns: int) -> int:
        leads.append(lead_ns)
        t0s.append(_core.now_ns() + 5_000_000)
        return t0s[-1]

    with pytps.Emulator(ttft_ms=1, itl_us=100, keep_truth=False) as emu:
        runner, result = _run(emu, tmp_path, share, start, requests=10, **load)
    assert sorted(r.index for r in result.records) == [1, 3, 5, 7, 9]
    assert len(leads) == 1  # awaited once, after the probe
    probe = next(r for r in result.records if r.index == 1)
    others = [r for r in result.records if r.index != 1]
    assert all(r.t_send_ns > probe.t_send_ns for r in others)
    if "rate" in load:
        assert runner.t_measure_start_ns == t0s[0]
        assert all(r.t_sched_ns is not None and r.t_sched_ns >= t0s[0] for r in others)
        assert all(r.t_send_ns >= r.t_sched_ns for r in others)


def test_a_barrier_that_says_stop_sends_only_the_probe(tmp_path):
    async def stop(lead_ns: int) -> None:
        return None

    with pytps.Emulator(ttft_ms=1, itl_us=100, keep_truth=False) as emu:
        _, result = _run(emu, tmp_path, None, stop, requests=6, concurrency=2)
    assert [r.index for r in result.records] == [0]


def test_request_stop_sends_nothing_more_and_keeps_the_first_reason(tmp_path):
    async def start(lead_ns: int) -> int:
        runner.request_stop("the driver's deadline")
        runner.request_stop("a later reason")
        return _core.now_ns()

    with pytps.Emulator(ttft_ms=1, itl_us=100, keep_truth=False) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "out", requests=6, rate=100.0, output_tokens=2)
        runner = Runner(cfg, keep_records=True, start=start)
        result = asyncio.run(runner.run())
    assert [r.index for r in result.records] == [0]
    assert result.stopped_reason == "the driver's deadline"
