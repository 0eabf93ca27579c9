"""How precisely the emulator keeps its schedule, and how many events per second it can write.

Three measurements, each from the emulator's own ground truth (sent = when the write returned,
scheduled = start + TTFT + i x ITL), driven by a raw-socket client in this script:

1. one stream at 50 µs ITL: p50 / p99 / max of (sent - scheduled); target p99 <= 50 µs;
2. 256 concurrent streams at 1 ms ITL for 10 s: the same, plus drift (lateness in the first
   and last second, and the slope of lateness over time); target p99 <= 200 µs, no drift;
3. events per second of the single timing thread: "burst", every event due at once (ITL 0)
   so the thread writes as fast as it can (target >= 200,000 events/s), and "sustained", the
   highest offered rate (256 streams, shrinking ITL) whose schedule it keeps (p99 < 1 ms,
   no drift).

First it measures the kernel's own cost of one small TCP send on loopback (system time of a
plain sending loop), the floor under any server's cost per event on this machine.

Each runs with the default settings and, where permitted, with realtime=True (SCHED_FIFO),
which keeps other load on the emulator's core from preempting it.

The emulator's thread is pinned to CPU 0 and the client to the other CPUs, so "one core"
means one core. Run it on a quiet machine: other load shows up as lateness.
Usage: python bench/bench_emulator.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import socket
import threading
import time

import numpy as np

import pytps

ALL_CPUS = sorted(os.sched_getaffinity(0))


def request_bytes(n_tokens: int) -> bytes:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "max_tokens": n_tokens}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def drain(socks: list[socket.socket], poll_s: float) -> None:
    """Reads every socket until each has seen the end of its chunked body. Reading in
    batches every `poll_s` keeps the client's CPU small; the server's writes do not wait
    for the reader (the socket buffers hold far more than one poll's worth)."""
    sel = selectors.DefaultSelector()
    tails = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        tails[s] = b""
    open_ = set(socks)
    while open_:
        if poll_s:
            time.sleep(poll_s)
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            try:
                data = s.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(s)
                open_.discard(s)
                continue
            tail = (tails[s] + data)[-16:]
            tails[s] = tail
            if tail.endswith(b"\r\n0\r\n\r\n"):
                sel.unregister(s)
                open_.discard(s)
    sel.close()


def run_streams(emu: pytps.Emulator, n_streams: int, n_tokens: int, poll_s: float) -> list[dict]:
    socks = [socket.create_connection(("127.0.0.1", emu.port)) for _ in range(n_streams)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = request_bytes(n_tokens)
    emu.truth(clear=True)
    for s in socks:
        s.sendall(req)
    drain(socks, poll_s)
    for s in socks:
        s.close()
    return emu.wait_truth(n_streams, timeout_s=30)


def lateness_us(records: list[dict]) -> np.ndarray:
    return np.concatenate([(r["sent_ns"] - r["scheduled_ns"]) for r in records]) / 1e3


def pct(a: np.ndarray) -> str:
    return f"p50 {np.percentile(a, 50):7.1f} µs   p99 {np.percentile(a, 99):7.1f} µs   max {a.max():9.1f} µs"


def pin_server_thread_then_client(start):
    """Starts the emulator with this thread pinned to CPU 0 (its timing thread inherits it),
    then moves this thread (and the client threads it starts) to the other CPUs."""
    cpus = ALL_CPUS
    if len(cpus) < 2:
        return start(), "unpinned (1 CPU)"
    os.sched_setaffinity(0, {cpus[0]})
    emu = start()
    os.sched_setaffinity(0, set(cpus[1:]))
    return emu, f"emulator on CPU {cpus[0]}, client on CPU {','.join(map(str, cpus[1:]))}"


def bench_single(quick: bool, mode: dict) -> float:
    n = 4_000 if quick else 20_000
    emu, where = pin_server_thread_then_client(
        lambda: pytps.Emulator(ttft_ms=5, itl_us=50, max_output_tokens=n, **mode).start())
    try:
        (rec,) = run_streams(emu, 1, n, poll_s=0.0)
    finally:
        emu.stop()
    late = lateness_us([rec])
    print(f"1 stream, ITL 50 µs, {len(late)} events ({where})")
    print(f"  sent - scheduled: {pct(late)}   target p99 <= 50 µs")
    return float(np.percentile(late, 99))


def bench_concurrent(quick: bool, mode: dict) -> float:
    seconds = 2 if quick else 10
    n_streams, itl_us = 256, 1000
    n = int(seconds * 1e6 / itl_us)
    emu, where = pin_server_thread_then_client(
        lambda: pytps.Emulator(ttft_ms=20, itl_us=itl_us, max_output_tokens=n, **mode).start())
    try:
        recs = run_streams(emu, n_streams, n, poll_s=0.005)
        stats = emu.stats()
    finally:
        emu.stop()
    late = lateness_us(recs)
    t0 = min(r["scheduled_ns"][0] for r in recs)
    sched_s = np.concatenate([r["scheduled_ns"] for r in recs]) - t0
    sched_s = sched_s / 1e9
    first = late[sched_s < 1.0]
    last = late[sched_s >= sched_s.max() - 1.0]
    slope = np.polyfit(sched_s, late, 1)[0]
    print(f"{n_streams} streams, ITL 1 ms, {seconds} s, coalesce={mode.get('coalesce', 1)}, {len(late)} events "
          f"({where}, {stats['write_blocked']} blocked writes)")
    print(f"  sent - scheduled: {pct(late)}   target p99 <= 200 µs")
    print(f"  first second: p50 {np.percentile(first, 50):.1f} µs p99 {np.percentile(first, 99):.1f} µs; "
          f"last second: p50 {np.percentile(last, 50):.1f} µs p99 {np.percentile(last, 99):.1f} µs; "
          f"drift {slope:+.2f} µs/s")
    return float(np.percentile(late, 99))


def bench_throughput(quick: bool, mode: dict, coalesce: int = 1) -> float:
    n_streams = 64
    n = 4_000 if quick else 20_000
    emu, where = pin_server_thread_then_client(
        lambda: pytps.Emulator(ttft_ms=0, itl_us=0, max_output_tokens=n, coalesce=coalesce, **mode).start())
    try:
        recs = run_streams(emu, n_streams, n, poll_s=0.002)
    finally:
        emu.stop()
    sent = np.concatenate([r["sent_ns"] for r in recs])
    events = len(sent)
    span_s = (sent.max() - sent.min()) / 1e9
    rate = events / span_s
    print(f"burst throughput: {n_streams} streams x {n} events due at once, coalesce={coalesce}: "
          f"{events} events in {span_s:.2f} s = {rate:,.0f} events/s ({where})"
          + ("   target >= 200,000 events/s" if coalesce == 1 else ""))
    return rate


def bench_kernel_baseline(n_conns: int = 256, seconds: float = 1.0) -> float:
    """The kernel's CPU time for one 220-byte TCP_NODELAY send on loopback, with a reader
    draining the other ends every 5 ms: the floor under any server's cost per event here.
    Measured as the sending thread's system time (its Python overhead is user time)."""
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]
    clients, servers = [], []
    for _ in range(n_conns):
        clients.append(socket.create_connection(("127.0.0.1", port)))
        s, _ = lsock.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        servers.append(s)
    lsock.close()
    stop = threading.Event()

    def reader():
        os.sched_setaffinity(0, set(ALL_CPUS[1:]) or set(ALL_CPUS))
        for c in clients:
            c.setblocking(False)
        while not stop.is_set():
            time.sleep(0.005)
            for c in clients:
                try:
                    while c.recv(1 << 16):
                        pass
                except BlockingIOError:
                    pass

    th = threading.Thread(target=reader)
    th.start()
    os.sched_setaffinity(0, {ALL_CPUS[0]})
    msg = b"x" * 220
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    t0 = time.perf_counter()
    sends = 0
    while time.perf_counter() - t0 < seconds:
        for s in servers:
            s.send(msg)
        sends += len(servers)
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    os.sched_setaffinity(0, set(ALL_CPUS))
    stop.set()
    th.join()
    for s in servers + clients:
        s.close()
    per_send_us = (r1.ru_stime - r0.ru_stime) / sends * 1e6
    print(f"kernel baseline: {per_send_us:.2f} µs of system time per 220-byte send to {n_conns} loopback "
          f"connections, so one core makes at most {1e6 / per_send_us:,.0f} such writes/s")
    return per_send_us


def bench_sustained(mode: dict) -> float:
    """Offered-load sweep: 256 streams, shrinking ITL, 2 s each. A rate is sustained when p99
    lateness stays under 1 ms and lateness does not grow (drift < 100 µs/s)."""
    best = 0.0
    for itl_us in (8000, 4000, 2000, 1333, 1000):
        n = int(2e6 / itl_us)
        emu, _ = pin_server_thread_then_client(
            lambda: pytps.Emulator(ttft_ms=20, itl_us=itl_us, max_output_tokens=n, **mode).start())
        try:
            recs = run_streams(emu, 256, n, poll_s=0.005)
        finally:
            emu.stop()
        late = lateness_us(recs)
        sched_s = (np.concatenate([r["scheduled_ns"] for r in recs]) - min(r["scheduled_ns"][0] for r in recs)) / 1e9
        slope = np.polyfit(sched_s, late, 1)[0]
        rate = 256 * 1e6 / itl_us
        ok = np.percentile(late, 99) <= 1000 and slope < 100
        print(f"  offered {rate:9,.0f} events/s (256 x {itl_us} µs): p99 {np.percentile(late, 99):9.1f} µs, "
              f"drift {slope:+9.1f} µs/s -> {'sustained' if ok else 'not sustained'}")
        if ok:
            best = max(best, rate)
    print(f"  highest sustained: {best:,.0f} events/s")
    return best


def realtime_allowed() -> bool:
    try:
        pytps.Emulator(realtime=True).start().stop()
        return True
    except ValueError:
        return False


def run_mode(quick: bool, name: str, mode: dict) -> None:
    print(f"--- {name}: {mode}")
    p99_single = bench_single(quick, mode)
    p99_conc = bench_concurrent(quick, mode)
    print("  (the same with coalesce=0: a late thread writes whatever is due in one write)")
    bench_concurrent(quick, {**mode, "coalesce": 0})
    rate = bench_throughput(quick, mode)
    rate8 = bench_throughput(quick, mode, coalesce=8)
    print("sustained schedule, one event per write:")
    sustained = bench_sustained(mode)
    print(f"ratios to target: single p99 {p99_single / 50:.2f}x of 50 µs, concurrent p99 {p99_conc / 200:.2f}x "
          f"of 200 µs, burst throughput {rate / 200_000:.2f}x of 200k events/s (coalesce 8: {rate8 / 200_000:.2f}x), "
          f"sustained {sustained / 200_000:.2f}x")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs (2 s instead of 10 s)")
    ap.add_argument("--mode", choices=["default", "realtime", "both"], default="both",
                    help="default settings, realtime (SCHED_FIFO timing thread), or both")
    args = ap.parse_args()
    print(f"pytps {pytps.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    bench_kernel_baseline()
    print()
    if args.mode in ("default", "both"):
        run_mode(args.quick, "default settings", {})
    if args.mode in ("realtime", "both"):
        if realtime_allowed():
            run_mode(args.quick, "realtime timing thread", {"realtime": True})
        else:
            print("--- realtime: not permitted here (needs root or CAP_SYS_NICE); skipped")


if __name__ == "__main__":
    main()
