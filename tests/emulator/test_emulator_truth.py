"""Ground truth and the schedule: every event is due where the absolute schedule puts it,
is never written early, and the records match the stream that carried them."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
from emu_raw import Conn, call

import pytps

MSG = [{"role": "user", "content": "hi"}]
CHAT = {"messages": MSG, "stream": True}


def test_fixed_schedule_is_absolute_and_never_early():
    with pytps.Emulator(ttft_ms=3.0, itl_us=250.0, default_output_tokens=40) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    n = len(t["sent_ns"])
    assert n == 40 == t["planned_events"] and t["completed"]
    expected = t["received_ns"] + 3_000_000 + 250_000 * np.arange(n)
    assert np.array_equal(t["scheduled_ns"], expected)
    assert (t["sent_ns"] >= t["scheduled_ns"]).all()
    assert t["received_ns"] <= t["headers_sent_ns"] <= t["sent_ns"][0] <= t["done_ns"]
    assert np.all(np.diff(t["sent_ns"]) >= 0)
    assert t["sent_ns"].dtype == np.int64 and t["tokens"].dtype == np.int32 and t["kinds"].dtype == np.uint8
    # Each token event is one HTTP chunk (one write): role chunk, 39 token chunks, then the
    # last token with the finish chunk and [DONE] in the same write.
    assert len(r.chunks) == 41


def test_kinds_tokens_and_usage_agree():
    with pytps.Emulator(ttft_ms=0.5, itl_us=50, reasoning_tokens=5, tokens_per_event=2, tool_calls=True,
                        default_output_tokens=12) as emu:
        call(emu.port, "POST", "/v1/chat/completions", {**CHAT, "stream_options": {"include_usage": True}})
        t = emu.wait_truth(1)[0]
    assert t["tokens"].tolist() == [2, 2, 1, 2, 2, 2, 1]
    assert t["kinds"].tolist() == [pytps.KIND_REASONING] * 3 + [pytps.KIND_TOOL] * 4
    assert (t["output_tokens"], t["reasoning_tokens"]) == (12, 5)


def test_prefill_adds_to_ttft_per_prompt_token():
    with pytps.Emulator(ttft_ms=1.0, itl_us=10, prefill_us_per_token=100.0, default_output_tokens=1) as emu:
        call(emu.port, "POST", "/v1/completions", {"prompt": "x" * 400, "stream": True})
        t = emu.wait_truth(1)[0]
    assert t["prompt_tokens"] == 100
    assert t["scheduled_ns"][0] - t["received_ns"] == 1_000_000 + 100 * 100_000


def test_replayed_gaps_cycle():
    with pytps.Emulator(ttft_ms=0, itl_replay_us=[100, 300, 50], default_output_tokens=8) as emu:
        call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    assert np.diff(t["scheduled_ns"]).tolist() == [100_000, 300_000, 50_000] * 2 + [100_000]


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_random_gaps_follow_the_seed(dist):
    def gaps(seed):
        with pytps.Emulator(ttft_ms=0, itl_us=200, itl_dist=dist, itl_sd_us=50, default_output_tokens=200,
                            seed=seed) as emu:
            call(emu.port, "POST", "/v1/chat/completions", CHAT)
            return np.diff(emu.wait_truth(1)[0]["scheduled_ns"])

    a, b, c = gaps(7), gaps(7), gaps(8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert (a >= 0).all()
    # 199 draws of mean 200 µs and sd 50 µs: the sample mean is within 5 standard errors.
    assert abs(a.mean() - 200_000) < 5 * 50_000 / np.sqrt(len(a))
    assert 30_000 < a.std() < 70_000


def test_ttft_distribution_with_seed():
    with pytps.Emulator(ttft_ms=5, ttft_dist="lognormal", ttft_sd_ms=2, itl_us=10, default_output_tokens=1,
                        seed=3) as emu:
        for _ in range(5):
            call(emu.port, "POST", "/v1/completions", {"prompt": "x", "stream": True})
        ttfts = [r["scheduled_ns"][0] - r["received_ns"] for r in emu.wait_truth(5)]
    assert len(set(ttfts)) == 5 and all(t > 0 for t in ttfts)


def test_coalesce_groups_events_into_one_write():
    with pytps.Emulator(ttft_ms=0.5, itl_us=100, coalesce=3, default_output_tokens=7) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    sent = t["sent_ns"].tolist()
    assert sent[0] == sent[1] == sent[2] and sent[3] == sent[4] == sent[5]
    # A group goes out when its last event is due.
    assert sent[0] >= t["scheduled_ns"][2] and sent[6] >= t["scheduled_ns"][6]
    assert len(r.chunks) == 1 + 3  # role chunk + three writes


@pytest.mark.timing
def test_coalesce_zero_writes_what_is_due_together():
    # Gaps of 0 make events 0-2 and 3-5 due together; the 1 ms gaps keep the groups apart.
    with pytps.Emulator(ttft_ms=0.5, itl_replay_us=[0, 0, 1000], coalesce=0, default_output_tokens=7) as emu:
        r = call(emu.port, "POST", "/v1/chat/completions", CHAT)
        t = emu.wait_truth(1)[0]
    sent = t["sent_ns"].tolist()
    assert sent[0] == sent[1] == sent[2] and sent[3] == sent[4] == sent[5] and sent[2] < sent[3] < sent[6]
    assert len(r.chunks) == 1 + 3


def test_truth_matches_concurrent_streams_by_id():
    with pytps.Emulator(ttft_ms=2, itl_us=200, default_output_tokens=10) as emu:
        results = {}

        def one(i):
            n = 3 + i
            path, body = [("/v1/chat/completions", {**CHAT, "max_tokens": n}),
                          ("/v1/messages", {**CHAT, "max_tokens": n}),
                          ("/v1/responses", {"input": "x", "stream": True, "max_output_tokens": n}),
                          ("/v1/completions", {"prompt": "x", "stream": True, "max_tokens": n})][i % 4]
            r = call(emu.port, "POST", path, body)
            results[r.headers["x-request-id"]] = n

        threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        truth = {r["id"]: r for r in emu.wait_truth(12)}
    assert set(truth) == set(results)
    for rid, n in results.items():
        assert truth[rid]["output_tokens"] == n and truth[rid]["completed"]


def test_truth_clear_and_log(tmp_path):
    log = tmp_path / "truth.jsonl"
    with pytps.Emulator(ttft_ms=0.5, itl_us=50, default_output_tokens=3, truth_log=str(log)) as emu:
        for _ in range(3):
            call(emu.port, "POST", "/api/chat", {"messages": MSG})
        kept = emu.wait_truth(3)
        assert len(emu.truth(clear=True)) == 3
        assert emu.truth() == []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [x["id"] for x in lines] == [k["id"] for k in kept] == ["ollama-1", "ollama-2", "ollama-3"]
    for x, k in zip(lines, kept):
        assert x["sent_ns"] == k["sent_ns"].tolist() and x["scheduled_ns"] == k["scheduled_ns"].tolist()
        assert x["tokens"] == [1, 1, 1] and x["kinds"] == [pytps.KIND_CONTENT] * 3 and x["status"] == 200


def test_client_going_away_is_recorded():
    with pytps.Emulator(ttft_ms=1, itl_us=2000, default_output_tokens=500) as emu:
        c = Conn(emu.port)
        c.send("POST", "/v1/chat/completions", CHAT)
        c.read_response(head_only=True)
        c.close()
        t = emu.wait_truth(1)[0]
    assert t["client_closed"] and not t["completed"] and t["output_tokens"] < 500


def test_stop_records_open_streams_as_incomplete():
    emu = pytps.Emulator(ttft_ms=1, itl_us=5000, default_output_tokens=1000).start()
    c = Conn(emu.port)
    c.send("POST", "/v1/chat/completions", CHAT)
    c.read_response(head_only=True)
    time.sleep(0.03)  # a few events out
    emu.stop()
    emu.stop()  # twice is fine
    c.close()
    (t,) = emu.truth()
    assert not t["completed"] and not t["client_closed"] and 0 < t["output_tokens"] < 1000
    assert not emu.running


def test_stats_count_events_and_writes():
    with pytps.Emulator(ttft_ms=0.5, itl_us=20, default_output_tokens=10) as emu:
        call(emu.port, "POST", "/v1/chat/completions", CHAT)
        emu.wait_truth(1)
        # The truth is kept at the last event; the stream is counted closed a moment later, after its
        # final write, on the emulator's own thread: wait for that, bounded.
        deadline = time.monotonic() + 5.0
        while (s := emu.stats())["streams_active"] != 0 and time.monotonic() < deadline:
            time.sleep(0.005)
    assert s["events_sent"] == 10 and s["generation_requests"] == 1 and s["writes"] >= 11
    assert s["streams_active"] == 0


def test_received_kernel_ns_is_when_the_kernel_had_the_request():
    with pytps.Emulator(ttft_ms=1.0, itl_us=100, default_output_tokens=3) as emu:
        stamps = []
        for _ in range(5):
            with Conn(emu.port) as c:
                before = time.monotonic_ns()
                c.send("POST", "/v1/chat/completions", CHAT)
                c.read_response()
            stamps.append(before)
        truth = sorted(emu.wait_truth(5), key=lambda t: t["seq"])
    for t, before in zip(truth, stamps):
        # After our send began, no later than the emulator's own stamp of having read it.
        assert t["received_kernel_ns"] is not None
        assert before <= t["received_kernel_ns"] <= t["received_ns"]
        assert t["received_ns"] - t["received_kernel_ns"] < 50_000_000
