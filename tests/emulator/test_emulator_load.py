"""The load model (docs/emulator.md, "Load"): a batch limit with a FIFO queue in front of it
and a decode slowdown that grows with the batch. Real HTTP on 127.0.0.1; every check is on the
emulator's own schedule (truth `scheduled_ns`, which it computes) against the documented
formulas, exactly, so nothing here depends on how busy the machine is. The request parser's
cost is counted, not timed."""

from __future__ import annotations

import math
import socket
import struct
import time

import numpy as np
import pytest
from emu_raw import Conn, call

import pytps

MSG = [{"role": "user", "content": "hi"}]


def chat(max_tokens: int | None = None, stream: bool = True) -> dict:
    body: dict = {"messages": MSG, "stream": stream}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def concurrent(port: int, bodies: list[dict]) -> list:
    """Sends every request on its own connection, in order, then reads every response."""
    conns = [Conn(port) for _ in bodies]
    try:
        for c, b in zip(conns, bodies, strict=True):
            c.send("POST", "/v1/chat/completions", b)
        return [c.read_response() for c in conns]
    finally:
        for c in conns:
            c.close()


def scaled_gap(gap: int, slowdown: float, n: int) -> int:
    """The documented gap at batch size n: gap + round(gap x slowdown x (n - 1)), halves away
    from zero, in the same IEEE operations as the emulator."""
    if n <= 1 or slowdown <= 0 or gap <= 0:
        return gap
    x = gap * slowdown * (n - 1)
    whole = math.floor(x)
    return gap + whole + (1 if x - whole >= 0.5 else 0)


def decoding_at(recs: list[dict], t: int) -> int:
    """Requests holding a slot at t: admitted at or before t and not released at or before t."""
    return sum(1 for r in recs if r["admitted_ns"] and r["admitted_ns"] <= t < r["released_ns"])


def check_batches(recs: list[dict]) -> None:
    """Each event's batch is the model's count when its gap was decided: at admission for
    event 0, at the due time of the event before for the others."""
    for r in recs:
        when = [r["admitted_ns"], *r["scheduled_ns"][:-1].tolist()] if r["stream"] else None
        if when is None:
            continue
        assert r["batch"].tolist() == [decoding_at(recs, t) for t in when], r["seq"]


def test_max_batch_admits_n_and_queues_the_rest_fifo():
    n_max, m, ttft_ms, itl_us, prefill_us, out = 3, 8, 2.0, 500.0, 10.0, 6
    with pytps.Emulator(ttft_ms=ttft_ms, itl_us=itl_us, prefill_us_per_token=prefill_us, max_batch=n_max,
                        default_output_tokens=out) as emu:
        resps = concurrent(emu.port, [chat()] * m)
        recs = sorted(emu.wait_truth(m), key=lambda r: r["received_ns"])
        stats = emu.stats()
    assert all(r.status == 200 and r.complete for r in resps)
    assert len(recs) == m and all(r["completed"] and r["status"] == 200 for r in recs)
    # FIFO: admitted in the order received (which is also the order of seq).
    assert [r["seq"] for r in recs] == sorted(r["seq"] for r in recs)
    admitted = [r["admitted_ns"] for r in recs]
    assert admitted == sorted(admitted)
    first, rest = recs[:n_max], recs[n_max:]
    for r in first:
        assert r["admitted_ns"] == r["received_ns"] and r["queued_ns"] == 0
    # Each queued request gets the slot of one that finished, at the very moment it freed.
    releases = sorted(r["released_ns"] for r in recs)
    for r in rest:
        assert r["queued_ns"] == r["admitted_ns"] - r["received_ns"] > 0
        assert r["admitted_ns"] in releases
    assert len({r["admitted_ns"] for r in rest}) == len(rest)
    # Exactly n_max decode at once at the busiest moment, never more.
    assert max(decoding_at(recs, r["admitted_ns"]) for r in recs) == n_max
    for r in recs:
        # The first token is due a TTFT (plus prefill) after admission, then one ITL per event.
        ttft = round(ttft_ms * 1e6) + round(prefill_us * 1e3) * r["prompt_tokens"]
        expected = r["admitted_ns"] + ttft + round(itl_us * 1e3) * np.arange(out)
        assert np.array_equal(r["scheduled_ns"], expected)
        assert (r["sent_ns"] >= r["scheduled_ns"]).all()
        assert r["released_ns"] == r["scheduled_ns"][-1]
        assert r["admitted_ns"] <= r["headers_sent_ns"] <= r["sent_ns"][0]
    check_batches(recs)
    assert (stats["decoding"], stats["queued"]) == (0, 0)


def _wait_stats(emu: pytps.Emulator, decoding: int, queued: int) -> None:
    deadline = time.monotonic() + 10
    while (emu.stats()["decoding"], emu.stats()["queued"]) != (decoding, queued):
        assert time.monotonic() < deadline, emu.stats()
        time.sleep(0.002)


def _reset(c: Conn) -> None:
    """Closes with a RST, which the emulator sees at once (a FIN only at its next write)."""
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def test_clients_that_leave_free_their_slot_or_their_place_in_the_queue():
    # A decodes until its client leaves (1 s gaps); B and C queue behind it. B leaves while
    # queued, then A leaves: C gets the slot at that moment. stats() shows each state.
    with pytps.Emulator(ttft_ms=0.1, itl_us=1e6, max_batch=1) as emu:
        a, b, c = Conn(emu.port), Conn(emu.port), Conn(emu.port)
        try:
            a.send("POST", "/v1/chat/completions", chat(1000))
            _wait_stats(emu, 1, 0)
            b.send("POST", "/v1/chat/completions", chat(1))
            c.send("POST", "/v1/chat/completions", chat(1))
            _wait_stats(emu, 1, 2)
            b.sock.shutdown(socket.SHUT_WR)  # a FIN while waiting: the queue drops it
            _wait_stats(emu, 1, 1)
            _reset(a)
            assert c.read_response().status == 200
            _wait_stats(emu, 0, 0)
        finally:
            for x in (a, b, c):
                x.close()
        recs = {r["seq"]: r for r in emu.wait_truth(3)}
    left, gone, served = recs[2], recs[1], recs[3]
    assert left["client_closed"] and not left["completed"]
    assert left["admitted_ns"] == 0 == left["released_ns"] and left["queued_ns"] > 0
    assert len(left["scheduled_ns"]) == 0 == len(left["batch"])
    assert gone["client_closed"] and gone["released_ns"] > gone["admitted_ns"] == gone["received_ns"]
    assert served["admitted_ns"] == gone["released_ns"] and served["queued_ns"] > 0
    assert served["scheduled_ns"].tolist() == [served["admitted_ns"] + 100_000]


@pytest.mark.parametrize("max_batch,coalesce", [(0, 1), (0, 3), (0, 0), (2, 1)])
def test_slowdown_follows_the_formula_with_the_batch_sizes_recorded(max_batch, coalesce):
    slowdown, itl = 0.35, 200_000
    lengths = [60, 20, 40, 30]
    with pytps.Emulator(ttft_ms=1.0, itl_us=itl / 1e3, batch_slowdown=slowdown, max_batch=max_batch,
                        coalesce=coalesce) as emu:
        resps = concurrent(emu.port, [chat(k) for k in lengths])
        recs = sorted(emu.wait_truth(len(lengths)), key=lambda r: r["seq"])
    assert all(r.status == 200 and r.complete for r in resps)
    for r, k in zip(recs, lengths, strict=True):
        assert r["completed"] and r["output_tokens"] == k
        s, b = r["scheduled_ns"], r["batch"]
        assert s[0] == r["admitted_ns"] + 1_000_000
        gaps = np.diff(s).tolist()
        assert gaps == [scaled_gap(itl, slowdown, int(n)) for n in b[1:]]
        assert (r["sent_ns"] >= s).all()
        assert r["released_ns"] == s[-1]
    check_batches(recs)
    # Gaps are re-decided per token: the longest stream saw the batch shrink as others ended.
    assert len(set(recs[0]["batch"].tolist())) >= 2
    assert max(int(r["batch"].max()) for r in recs) == (max_batch or len(lengths))


def test_slowdown_rounds_to_the_nearest_ns():
    # 333 ns x 0.5 x (n - 1): halves round away from zero, as the formula says.
    assert [scaled_gap(333, 0.5, n) for n in (1, 2, 3, 4)] == [333, 500, 666, 833]
    with pytps.Emulator(ttft_ms=0.5, itl_us=0.333, batch_slowdown=0.5, default_output_tokens=200) as emu:
        concurrent(emu.port, [chat()] * 3)
        recs = emu.wait_truth(3)
    for r in recs:
        assert np.diff(r["scheduled_ns"]).tolist() == [scaled_gap(333, 0.5, int(n)) for n in r["batch"][1:]]


def test_a_stall_is_added_unscaled_and_a_cut_stream_frees_its_slot_when_due():
    # seq 1 and 3 are cut after 3 events, seq 2 stalls 2 ms before event 4; two slots.
    itl, slowdown, stall = 300_000, 1.0, 2_000_000
    with pytps.Emulator(ttft_ms=1, itl_us=itl / 1e3, batch_slowdown=slowdown, max_batch=2, default_output_tokens=8,
                        faults=[{"kind": "stall", "every": 2, "seconds": stall / 1e9, "after_events": 4},
                                {"kind": "disconnect", "every": 1, "after_events": 3}]) as emu:
        concurrent(emu.port, [chat()] * 3)
        recs = sorted(emu.wait_truth(3), key=lambda r: r["seq"])
    cut, stalled, queued = recs
    assert [r["fault"] for r in recs] == ["disconnect", "stall", "disconnect"]
    check_batches(recs)
    for r in (cut, queued):
        # Cut after 3 events: the slot frees when the 4th would have been due.
        s = r["scheduled_ns"]
        assert len(s) == 3
        assert r["released_ns"] == s[-1] + scaled_gap(itl, slowdown, decoding_at(recs, int(s[-1])))
    assert queued["admitted_ns"] == cut["released_ns"]
    gaps = np.diff(stalled["scheduled_ns"]).tolist()
    batch = stalled["batch"].tolist()
    assert gaps == [scaled_gap(itl, slowdown, batch[i]) + (stall if i == 4 else 0) for i in range(1, 8)]
    assert 2 in batch


def test_non_streaming_holds_a_slot_until_its_body_is_due():
    with pytps.Emulator(ttft_ms=1, itl_us=250, max_batch=1, default_output_tokens=10) as emu:
        resps = concurrent(emu.port, [chat(stream=False), chat(stream=False)])
        recs = sorted(emu.wait_truth(2), key=lambda r: r["seq"])
    assert [r.status for r in resps] == [200, 200]
    for r in recs:
        assert r["scheduled_ns"].tolist() == [r["admitted_ns"] + 1_000_000 + 9 * 250_000]
        assert r["released_ns"] == r["scheduled_ns"][0] and r["batch"].tolist() == [1]
    assert recs[1]["admitted_ns"] == recs[0]["released_ns"]


def test_errors_never_take_a_slot():
    with pytps.Emulator(ttft_ms=20, itl_us=100, max_batch=1, default_output_tokens=2,
                        faults=[{"kind": "http_429", "every": 2}]) as emu:
        with Conn(emu.port) as a:
            a.send("POST", "/v1/chat/completions", chat())
            assert call(emu.port, "POST", "/v1/chat/completions", chat()).status == 429
            assert call(emu.port, "POST", "/v1/chat/completions", {"messages": 3}).status == 400
            assert a.read_response().status == 200
        recs = {r["seq"]: r for r in emu.wait_truth(3)}
    assert recs[1]["queued_ns"] == 0
    for seq in (2, 3):
        assert recs[seq]["admitted_ns"] == 0 == recs[seq]["queued_ns"] and len(recs[seq]["batch"]) == 0


def test_defaults_admit_at_once_and_record_the_batch():
    with pytps.Emulator(ttft_ms=1, itl_us=100, default_output_tokens=5) as emu:
        call(emu.port, "POST", "/v1/chat/completions", chat())
        r = emu.wait_truth(1)[0]
        assert (emu.stats()["decoding"], emu.stats()["queued"]) == (0, 0)
    assert r["admitted_ns"] == r["received_ns"] and r["queued_ns"] == 0
    assert r["scheduled_ns"].tolist() == [r["received_ns"] + 1_000_000 + 100_000 * i for i in range(5)]
    assert r["released_ns"] == r["scheduled_ns"][-1]
    assert r["batch"].dtype == np.int32 and r["batch"].tolist() == [1] * 5


def test_truth_log_carries_the_load_fields(tmp_path):
    import json

    log = tmp_path / "truth.jsonl"
    with pytps.Emulator(ttft_ms=1, itl_us=100, max_batch=1, default_output_tokens=3, truth_log=str(log)) as emu:
        concurrent(emu.port, [chat(), chat()])
        recs = sorted(emu.wait_truth(2), key=lambda r: r["seq"])
    lines = sorted((json.loads(x) for x in log.read_text().splitlines()), key=lambda d: d["seq"])
    for d, r in zip(lines, recs, strict=True):
        for key in ("admitted_ns", "released_ns", "queued_ns"):
            assert d[key] == r[key]
        assert d["batch"] == r["batch"].tolist()


@pytest.mark.parametrize("kwargs,needle", [
    ({"max_batch": -1}, "max_batch must be an integer >= 0"),
    ({"max_batch": 2.5}, "max_batch must be an integer >= 0"),
    ({"max_batch": True}, "max_batch must be an integer >= 0"),
    ({"batch_slowdown": -0.1}, "batch_slowdown must be a number within [0, 100]"),
    ({"batch_slowdown": float("nan")}, "batch_slowdown must be a number within [0, 100]"),
    ({"batch_slowdown": 1e3}, "batch_slowdown must be a number within [0, 100]"),
    ({"batch_slowdown": "fast"}, "batch_slowdown must be a number"),
])
def test_bad_load_settings_are_refused(kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        pytps.Emulator(**kwargs)


@pytest.mark.parametrize("flags,needle", [
    (["--max-batch", "-1"], "pytps serve: max_batch must be an integer >= 0, got -1"),
    (["--batch-slowdown", "-2"], "pytps serve: batch_slowdown must be a number within [0, 100], got -2.0"),
])
def test_serve_refuses_bad_load_flags_in_one_line(flags, needle, capsys):
    from pytps.cli import main

    assert main(["serve", "--port", "0", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == needle


def test_ttft_ramp_adds_its_rate_times_the_seconds_since_the_start():
    # A drifting server (--ttft-ramp-ms-per-s): each request's first token is due admission + TTFT
    # + ramp x (its arrival - the emulator's start). Two requests 0.3 s apart: their extra TTFTs
    # differ by ramp x their arrivals' distance, to the nanosecond of rounding.
    ramp_ms, ttft_ms = 200.0, 2.0
    before = time.monotonic_ns()
    with pytps.Emulator(ttft_ms=ttft_ms, itl_us=100, ttft_ramp_ms_per_s=ramp_ms, default_output_tokens=2) as emu:
        assert call(emu.port, "POST", "/v1/chat/completions", chat()).status == 200
        time.sleep(0.3)
        assert call(emu.port, "POST", "/v1/chat/completions", chat()).status == 200
        recs = sorted(emu.wait_truth(2), key=lambda r: r["received_ns"])
    extra = [int(r["scheduled_ns"][0]) - r["admitted_ns"] - round(ttft_ms * 1e6) for r in recs]
    assert 0 <= extra[0] <= ramp_ms * 1e6 * (recs[0]["received_ns"] - before) / 1e9
    expected = ramp_ms * 1e6 * (recs[1]["received_ns"] - recs[0]["received_ns"]) / 1e9
    assert abs((extra[1] - extra[0]) - expected) <= 2, (extra, expected)
    assert extra[1] - extra[0] >= 0.3 * ramp_ms * 1e6 * 0.99
    with pytps.Emulator(ttft_ms=ttft_ms, itl_us=100, default_output_tokens=2) as emu:  # no ramp: none added
        call(emu.port, "POST", "/v1/chat/completions", chat())
        (r,) = emu.wait_truth(1)
    assert int(r["scheduled_ns"][0]) - r["admitted_ns"] == round(ttft_ms * 1e6)
    with pytest.raises(ValueError, match="ttft_ramp_ms_per_s"):
        pytps.Emulator(ttft_ramp_ms_per_s=-1)
