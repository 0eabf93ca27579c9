"""The timing tests' excuse (tests/machine_took.py) sees pytps's native threads by name, and
explains an excess only up to what the threads waited for a CPU."""

from __future__ import annotations

import sys

import pytest
from machine_took import CallTook, ThreadsTook, check_within

import pytps


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc/self/task names the threads")
def test_the_emulators_thread_is_seen_by_its_name() -> None:
    with pytps.Emulator(ttft_ms=1) as emu, ThreadsTook() as took:
        assert emu.base_url  # the server's thread runs inside the block
    assert took.threads >= 1
    assert took.run_delay_ns >= 0


def test_an_excess_is_explained_only_up_to_the_wait() -> None:
    took = CallTook()
    took.first_token()
    took.run_delay_ns, took.stolen = 2_000_000, False
    assert took.explains(0.0015)
    assert took.explains(0.002)
    assert not took.explains(0.0021)
    took.stolen = True
    assert took.explains(1.0)


def test_an_excess_nothing_explains_fails_at_once() -> None:
    runs = []

    def measure() -> float:
        runs.append(1)
        return 0.0025  # 1.5 ms over, no native thread running, nothing waiting

    with pytest.raises(AssertionError, match=r"2\.500 ms, 1\.500 ms over the 1 ms limit"):
        check_within(1e-3, measure, "planted")  # a skip here: the hypervisor stole CPU meanwhile
    assert runs == [1]


def test_a_run_within_the_limit_passes_once() -> None:
    runs = []
    check_within(1e-3, lambda: runs.append(1) or 0.0009, "planted")
    assert runs == [1]
