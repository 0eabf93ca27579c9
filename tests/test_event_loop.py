"""The event loops' precise wait (csrc/io/event_loop.cpp): a sleep to a sub-millisecond
deadline is one return from the kernel, not a busy poll, and the deadline is met, on the wait
this build has: epoll_pwait2, or the ppoll fallback of a glibc without it (CI builds that one
with -DPYTPS_FORCE_EPOLL_FALLBACK=ON, .ci/steps/30-epoll-fallback.sh)."""

from __future__ import annotations

import os

import pytest

import pytps
from emu_raw import call
from pytps import _core

WAIT_NS = 300_000  # below epoll_wait's millisecond: the case the old fallback busy-polled
N = 200
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_the_build_says_which_wait_it_has():
    assert _core.EPOLL_WAIT in ("epoll_pwait2", "ppoll")
    # CI's fallback step says which one it built; elsewhere either is right.
    expected = os.environ.get("PYTPS_EXPECT_EPOLL_WAIT")
    if expected:
        assert _core.EPOLL_WAIT == expected


@pytest.mark.parametrize("spin_ns", [60_000, 0], ids=lambda s: f"{_core.EPOLL_WAIT}-spin{s // 1000}us")
def test_a_300us_deadline_is_one_kernel_return(spin_ns):
    r = _core._event_loop_probe(WAIT_NS, N, spin_ns)
    assert r["wait"] == _core.EPOLL_WAIT and r["deadlines"] == N
    # One sleep per deadline (to the spin window, or to the deadline without a spin). The old
    # fallback, epoll_wait with the timeout in whole ms, made the 240 µs sleep epoll_wait(0):
    # several hundred returns per deadline.
    assert r["sleeps"] <= 2 * N, r
    assert r["polls"] <= 3 * N, r
    late = sorted(r["late_ns"])
    assert late[0] >= 0  # never early
    if spin_ns:
        # The spin meets the deadline to the µs; only a preempted thread (a shared machine)
        # is late, and not most of the time.
        assert r["spins"] >= N // 2, r
        assert late[N // 2] < 50_000, late[N // 2]
    else:
        # A sleep alone is late by the wake-up latency (tens of µs); a millisecond-granular
        # timeout rounded up would be 700 µs late.
        assert r["spins"] == 0
        assert late[N // 2] < 500_000, late[N // 2]


def test_the_emulator_sleeps_once_per_event():
    with pytps.Emulator(ttft_ms=1, itl_us=WAIT_NS / 1000, default_output_tokens=100) as emu:
        call(emu.port, "POST", "/v1/chat/completions", CHAT)
        (t,) = emu.wait_truth(1)
        s = emu.stats()
    assert t["completed"] and s["events_sent"] == 100
    # About one per event, plus the waits for the request and between connections.
    assert s["sleeps"] <= 2 * 100 + 20, s


def test_probe_rejects_nonsense():
    with pytest.raises(ValueError):
        _core._event_loop_probe(-1, 1)
    with pytest.raises(ValueError):
        _core._event_loop_probe(1000, 0)


def test_a_truth_log_that_cannot_be_written_is_reported_at_stop():
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    emu = pytps.Emulator(ttft_ms=0.5, itl_us=20, default_output_tokens=3, truth_log="/dev/full").start()
    try:
        call(emu.port, "POST", "/v1/chat/completions", CHAT)
        emu.wait_truth(1)
    finally:
        with pytest.raises(RuntimeError, match=r"truth log '/dev/full' failed: No space left on device"):
            emu.stop()
    emu.stop()  # reported once; stopping again is quiet
