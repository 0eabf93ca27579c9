"""The realtime transport's native sender thread (pytps._core.FramePacer) over real socket pairs:
items leave in (due, call order) order and never split one another, a full socket buffer only
delays them (the bytes arrive whole and in order), each stamped item's write stamp is at or after
its due instant, close() drops what is unsent and hands the descriptor back, and a peer that went
away is an errno at close(), not a SIGPIPE. Timing precision is the timing tier's
(tests/runner/test_voice_realtime.py): nothing here asserts how late a write was."""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from pytps._native import _core


@pytest.fixture
def pacer() -> _core.FramePacer:
    return _core.FramePacer(spin_ns=50_000)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.setblocking(False)
    yield a, b
    a.close()
    b.close()


def _read_all(sock: socket.socket, n: int, timeout_s: float = 10.0) -> bytes:
    sock.settimeout(timeout_s)
    got = bytearray()
    while len(got) < n:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        got += chunk
    return bytes(got)


def test_items_leave_in_due_order_then_call_order(pacer: _core.FramePacer, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    ch = pacer.open(a.fileno())
    t0 = _core.now_ns() + 30_000_000
    # Queued out of order: (due offset ms, payload, stamped)
    items = [(6, b"F6|", True), (2, b"F2|", True), (4, b"F4a|", True), (4, b"F4b|", False), (0, b"now|", False)]
    for at_ms, data, stamped in items:
        assert pacer.send(ch, t0 + at_ms * 1_000_000 if at_ms else 0, data, stamped)
    expected = b"now|F2|F4a|F4b|F6|"
    assert _read_all(b, len(expected)) == expected
    sent_ns, unsent, err = pacer.close(ch)
    assert (unsent, err) == (0, 0)
    assert len(sent_ns) == 3  # the stamped ones, in write order
    assert sent_ns == sorted(sent_ns)
    for stamp, at_ms in zip(sent_ns, (2, 4, 6), strict=True):
        assert stamp >= t0 + at_ms * 1_000_000  # never early


def test_a_full_socket_buffer_delays_items_but_never_splits_them(pacer: _core.FramePacer,
                                                                 pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ch = pacer.open(a.fileno())
    blocks = [bytes([65 + i]) * 50_000 for i in range(8)]  # far more than the buffers hold
    for block in blocks:
        pacer.send(ch, 0, block, True)
    time.sleep(0.05)  # nobody reads: the first block is written in part, the rest wait
    pacer.send(ch, 0, b"<pong>", False)  # due now too, but behind what is already queued at 0
    expected = b"".join(blocks) + b"<pong>"
    got = _read_all(b, len(expected))
    assert got == expected
    sent_ns, unsent, err = pacer.close(ch)
    assert (len(sent_ns), unsent, err) == (8, 0, 0)


def test_an_earlier_item_goes_between_frames_never_inside_a_partly_written_one(
    pacer: _core.FramePacer, pair: tuple[socket.socket, socket.socket]
) -> None:
    a, b = pair
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    ch = pacer.open(a.fileno())
    t0 = _core.now_ns()
    big = b"A" * 200_000
    pacer.send(ch, t0, big, True)  # written in part: the socket buffer fills
    pacer.send(ch, t0 + 1_000_000_000, b"LATER", True)
    time.sleep(0.05)
    pacer.send(ch, 0, b"<pong>", False)  # earlier than LATER, but the head is partly written
    expected = big + b"<pong>"
    assert _read_all(b, len(expected)) == expected
    sent_ns, unsent, err = pacer.close(ch)
    assert (len(sent_ns), unsent, err) == (1, 1, 0)  # LATER was never due: dropped at close


def test_close_drops_the_unsent_and_the_channel_takes_no_more(pacer: _core.FramePacer,
                                                              pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    ch = pacer.open(a.fileno())
    far = _core.now_ns() + 60_000_000_000
    for k in range(5):
        assert pacer.send(ch, far + k, b"x", True)
    assert pacer.close(ch) == ([], 5, 0)
    assert not pacer.send(ch, 0, b"late", False)
    assert pacer.close(ch) == ([], 0, 0)  # an unknown channel: nothing
    # The descriptor is the caller's again: its own write goes through, nothing of the pacer's follows.
    a.send(b"mine")
    b.settimeout(0.2)
    assert b.recv(100) == b"mine"


def test_a_peer_gone_is_an_errno_at_close_not_a_signal(pacer: _core.FramePacer) -> None:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.close()
    ch = pacer.open(a.fileno())
    # The thread may try the first item before the next are queued: once its write has failed,
    # send() refuses more (False), so only the accepted ones are the pacer's to drop.
    accepted = sum(pacer.send(ch, 0, b"into the void", True) for _ in range(3))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pacer.send(ch, 0, b"probe", False):  # False once a write failed
        time.sleep(0.01)
    sent_ns, unsent, err = pacer.close(ch)
    a.close()
    assert err in (errno.EPIPE, errno.ECONNRESET)
    assert sent_ns == [] and unsent >= accepted >= 1  # a Unix socket's first write to a closed peer fails


def test_many_channels_from_many_threads_each_get_their_own_bytes(pacer: _core.FramePacer) -> None:
    pairs = [socket.socketpair() for _ in range(6)]
    try:
        t0 = _core.now_ns() + 10_000_000
        expected = []

        def feed(i: int) -> None:
            a = pairs[i][0]
            a.setblocking(False)
            ch = pacer.open(a.fileno())
            frames = [f"{i}:{k};".encode() for k in range(50)]
            for k, data in enumerate(frames):
                pacer.send(ch, t0 + k * 200_000, data, True)
            expected.append((i, ch, b"".join(frames)))

        threads = [threading.Thread(target=feed, args=(i,)) for i in range(len(pairs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, ch, want in expected:
            assert _read_all(pairs[i][1], len(want)) == want
            sent_ns, unsent, err = pacer.close(ch)
            assert (len(sent_ns), unsent, err) == (50, 0, 0)
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_a_negative_spin_or_descriptor_is_refused() -> None:
    with pytest.raises(ValueError, match="spin_ns"):
        _core.FramePacer(spin_ns=-1)
    with pytest.raises(ValueError, match="descriptor"):
        _core.FramePacer().open(-1)


def test_frames_queued_at_once_leave_in_order_behind_what_is_queued(
    pacer: _core.FramePacer, pair: tuple[socket.socket, socket.socket]
) -> None:
    a, b = pair
    ch = pacer.open(a.fileno())
    t0 = _core.now_ns() + 20_000_000
    assert pacer.send(ch, 0, b"hello|")
    dues = [t0 + k * 1_000_000 for k in range(20)]
    frames = [f"f{k}|".encode() for k in range(20)]
    assert pacer.send_frames(ch, dues, frames)
    assert pacer.send(ch, dues[-1], b"commit|")  # due with the last frame: right behind it
    expected = b"hello|" + b"".join(frames) + b"commit|"
    assert _read_all(b, len(expected)) == expected
    sent_ns, unsent, err = pacer.close(ch)
    assert (len(sent_ns), unsent, err) == (20, 0, 0)
    assert all(s >= d for s, d in zip(sent_ns, dues, strict=True))
    with pytest.raises(ValueError, match="decrease"):
        pacer.send_frames(pacer.open(a.fileno()), [2, 1], [b"x", b"y"])
    with pytest.raises(ValueError, match="length"):
        pacer.send_frames(ch, [1], [])


def test_a_forked_child_drops_its_copy_without_hanging_and_makes_its_own() -> None:
    from pytps.transport import realtime

    parent_id = id(realtime._pacer())  # no reference kept: the child's copy is freed when replaced
    pid = os.fork()
    if pid == 0:  # the child: the parent's pacer object without its thread
        code = 1
        try:
            mine = realtime._pacer()  # a new one; the copy is freed (no join of a thread not here)
            a, b = socket.socketpair()
            a.setblocking(False)
            ch = mine.open(a.fileno())
            mine.send(ch, 0, b"from the child")
            b.settimeout(5)
            code = 0 if b.recv(100) == b"from the child" and id(mine) != parent_id else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(status) == 0


def _pacer_thread_policies() -> list[int]:
    """The scheduling policy of each of this process's threads named pytps-pacer (Linux's /proc)."""
    policies = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                if f.read().strip() != "pytps-pacer":
                    continue
            policies.append(os.sched_getscheduler(int(task)))
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return policies


def _may_use_fifo() -> bool:
    """Whether this process may make a thread SCHED_FIFO: tried on a short-lived child."""
    pid = os.fork()
    if pid == 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads thread policies from Linux's /proc")
def test_a_realtime_pacer_runs_sched_fifo_where_the_process_may_and_a_normal_thread_otherwise(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    before = _pacer_thread_policies()
    normal = _core.FramePacer(spin_ns=50_000)
    assert normal.realtime is False
    rt = _core.FramePacer(spin_ns=50_000, realtime=True)
    assert rt.realtime is _may_use_fifo()
    after = _pacer_thread_policies()
    assert len(after) == len(before) + 2
    assert after.count(os.SCHED_FIFO) - before.count(os.SCHED_FIFO) == (1 if rt.realtime else 0)
    # Either way it paces: its frames leave in order.
    a, b = pair
    channel = rt.open(a.fileno())
    start = _core.now_ns() + 2_000_000
    assert rt.send_frames(channel, [start + k * 1_000_000 for k in range(5)], [bytes([k]) * 10 for k in range(5)])
    assert _read_all(b, 50) == b"".join(bytes([k]) * 10 for k in range(5))
    sent_ns, unsent, err = rt.close(channel)
    assert len(sent_ns) == 5 and unsent == 0 and err == 0
    assert all(t >= start + k * 1_000_000 for k, t in enumerate(sent_ns))
    del normal, rt
