"""The event loops' precise wait (csrc/io/event_loop.cpp): a sleep to a sub-millisecond
deadline is one return from the kernel, not a busy poll, and the deadline is met, on the
backend and wait this build has: epoll with epoll_pwait2, or with the ppoll fallback of a glibc
without it (-DPYTPS_FORCE_EPOLL_FALLBACK=ON), or poll() with ppoll (-DPYTPS_EVENT_BACKEND=poll;
CI builds those two in .ci/steps/30-poll-sdist.sh)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import pytest
from emu_raw import call

import pytps
from pytps import _core

WAIT_NS = 300_000  # below epoll_wait's millisecond: the case the old fallback busy-polled
N = 200
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_the_build_says_which_wait_it_has():
    kinds = {("epoll", "epoll_pwait2"), ("epoll", "ppoll"), ("poll", "ppoll"), ("poll", "poll")}
    assert (_core.EVENT_BACKEND, _core.EVENT_WAIT) in kinds
    # CI's other builds say which one they built; elsewhere any is right.
    expected = os.environ.get("PYTPS_EXPECT_EVENT_WAIT")
    if expected:
        assert expected == f"{_core.EVENT_BACKEND}/{_core.EVENT_WAIT}"


@pytest.mark.parametrize("spin_ns", [60_000, 0], ids=lambda s: f"{_core.EVENT_BACKEND}-{_core.EVENT_WAIT}-spin{s // 1000}us")
def test_a_300us_deadline_is_one_kernel_return(spin_ns):
    if _core.EVENT_WAIT == "poll":
        pytest.skip("poll() sleeps whole milliseconds: a 300 us deadline is polled, not slept (README, Platforms)")
    r = _core._event_loop_probe(WAIT_NS, N, spin_ns)
    assert r["wait"] == _core.EVENT_WAIT and r["deadlines"] == N
    # One sleep per deadline (to the spin window, or to the deadline without a spin). The old
    # fallback, epoll_wait with the timeout in whole ms, made the 240 µs sleep epoll_wait(0):
    # several hundred returns per deadline.
    assert r["sleeps"] <= 2 * N, r
    assert r["polls"] <= 3 * N, r
    assert min(r["late_ns"]) >= 0  # never early
    if spin_ns:
        assert r["spins"] >= N // 2, r
    else:
        assert r["spins"] == 0


@pytest.mark.timing
@pytest.mark.parametrize("spin_ns", [60_000, 0], ids=lambda s: f"{_core.EVENT_BACKEND}-{_core.EVENT_WAIT}-spin{s // 1000}us")
def test_a_300us_deadline_is_met(spin_ns):
    r = _core._event_loop_probe(WAIT_NS, N, spin_ns)
    late = sorted(r["late_ns"])
    if spin_ns:
        # The spin meets the deadline to the µs; only a preempted thread (a shared machine)
        # is late, and not most of the time.
        assert late[N // 2] < 50_000, late[N // 2]
    else:
        # A sleep alone is late by the wake-up latency (tens of µs); a millisecond-granular
        # timeout rounded up would be 700 µs late.
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


# A kernel older than 5.11 answers epoll_pwait2 with ENOSYS, a seccomp profile that predates
# it (container runtimes) with EPERM. A seccomp filter makes either here, in a child process:
# loops made after it sleep in ppoll, whether the refusal comes before the module's probe or
# only at a loop's first wait.
_REFUSE_PWAIT2 = textwrap.dedent(
    """
    import ctypes, sys
    err, before = int(sys.argv[1]), sys.argv[2] == "before"
    if not before:
        from pytps import _core
    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
    insns = (Insn * 4)(
        Insn(0x20, 0, 0, 0),                # load the syscall number
        Insn(0x15, 0, 1, 441),              # epoll_pwait2 (441 on every architecture)?
        Insn(0x06, 0, 0, 0x00050000 | err), # then fail with err
        Insn(0x06, 0, 0, 0x7FFF0000),       # else allow
    )
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(Prog(4, insns)), 0, 0) != 0:
        print("no seccomp here")
        sys.exit(0)
    from pytps import _core
    r = _core._event_loop_probe(300_000, 50)
    print(_core.EVENT_WAIT, r["wait"], r["sleeps"])
    """
)


@pytest.mark.skipif(_core.EVENT_BACKEND != "epoll", reason="the epoll backend's fallback")
@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("err", [errno.ENOSYS, errno.EPERM], ids=["ENOSYS", "EPERM"])
def test_a_kernel_that_refuses_epoll_pwait2_gets_the_fallback(err, when):
    out = subprocess.run(
        [sys.executable, "-c", _REFUSE_PWAIT2, str(err), when], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() == "no seccomp here":
        pytest.skip("seccomp filters are not allowed here")
    module_wait, loop_wait, sleeps = out.stdout.split()
    # The module's probe ran before the filter in "after": it still says what it found then.
    assert module_wait == ("ppoll" if when == "before" else _core.EVENT_WAIT)
    assert loop_wait == "ppoll"
    assert int(sleeps) <= 2 * 50
