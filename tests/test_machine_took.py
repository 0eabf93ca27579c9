"""The timing tests' excuse (tests/machine_took.py) sees pytps's native threads by name, and
explains an excess only up to what the threads waited for a CPU."""

from __future__ import annotations

import sys

import pytest
from machine_took import CallTook, ThreadsTook

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
