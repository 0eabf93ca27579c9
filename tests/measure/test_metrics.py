"""The metric definitions of docs/metrics.md on hand-made records with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytps.measure.metrics import (
    decode_span,
    distribution,
    event_tokens,
    itl_samples,
    request_metrics,
    steady_intervals_of,
    trusted_event_counts,
)
from pytps.measure.records import RequestRecord
from pytps.measure.summary import summarize

MS = 1_000_000


def make(index=0, t_send=0, times_ms=(), tokens=None, usage=None, kinds=None, end_ms=None, error=None,
         t_sched=None, warmup=False, first_answer_ms=None, done_ms=None):
    times = np.asarray([int(t * MS) for t in times_ms], dtype=np.int64)
    n = len(times)
    rec = RequestRecord(index=index, t_send_ns=t_send, t_sched_ns=t_sched, warmup=warmup, error=error)
    rec.output_times_ns = times
    rec.output_tokens = np.asarray(tokens if tokens is not None else [-1] * n, dtype=np.int32)
    rec.output_kinds = np.asarray(kinds if kinds is not None else [0] * n, dtype=np.uint8)
    rec.output_chars = np.ones(n, dtype=np.int32)
    rec.usage = usage or {}
    rec.first_output_ns = int(times[0]) if n else None
    rec.last_output_ns = int(times[-1]) if n else None
    rec.first_answer_ns = int(first_answer_ms * MS) if first_answer_ms is not None else rec.first_output_ns
    rec.end_ns = int(end_ms * MS) if end_ms is not None else rec.last_output_ns
    rec.t_done_ns = int(done_ms * MS) if done_ms is not None else rec.end_ns
    rec.done = error is None
    return rec


def test_ttft_tpot_e2e_from_their_definitions():
    # 5 events of 1 token, 10 ms apart, first at 50 ms; usage says 5 tokens.
    rec = make(t_send=0, times_ms=[50, 60, 70, 80, 90], usage={"completion_tokens": 5}, end_ms=91)
    m = request_metrics(rec)
    assert m.ttft_s == pytest.approx(0.050)
    assert m.e2e_s == pytest.approx(0.091)
    assert m.output_tokens == 5 and m.token_source == "usage"
    # (5 - 1) tokens over 40 ms -> 100 tok/s; TPOT 10 ms; TTFT is not folded in.
    assert m.decode_tps == pytest.approx(100.0)
    assert m.tpot_s == pytest.approx(0.010)


def test_ttfat_skips_reasoning():
    rec = make(times_ms=[10, 20, 30], kinds=[1, 1, 0], first_answer_ms=30)
    assert request_metrics(rec).ttfat_s == pytest.approx(0.030)
    assert request_metrics(rec).ttft_s == pytest.approx(0.010)


def test_token_source_preference():
    rec = make(times_ms=[1, 2, 3])
    assert request_metrics(rec).token_source == "events"
    assert request_metrics(rec).output_tokens == 3
    rec.tokenizer_tokens = 7
    assert request_metrics(rec).token_source == "tokenizer"
    rec.usage = {"completion_tokens": 9}
    assert (request_metrics(rec).output_tokens, request_metrics(rec).token_source) == (9, "usage")


def test_multi_token_events_give_per_token_itl():
    # 4 tokens per event, 2 ms apart: ITL samples of 0.5 ms, four per event after the first.
    rec = make(times_ms=[10, 12, 14, 16], usage={"completion_tokens": 16})
    layout = event_tokens(rec, 16)
    assert layout.tolist() == [4, 4, 4, 4]
    values, counts = itl_samples(rec.output_times_ns, layout)
    assert values.tolist() == [0.5 * MS] * 3 and counts.tolist() == [4, 4, 4]
    m = request_metrics(rec)
    # First event holds tokens/events = 4; 12 tokens over 6 ms.
    assert m.decode_tps == pytest.approx(2000.0)
    summary, _ = summarize([rec])
    assert summary["itl_s"]["count"] == 12
    assert summary["itl_s"]["p50"] == pytest.approx(0.0005, rel=1e-3)
    assert summary["itl_s"]["mean"] == pytest.approx(m.tpot_s, rel=1e-9)
    assert summary["tokens_per_event"] == pytest.approx(4.0)


def test_per_event_usage_is_used_when_known():
    rec = make(times_ms=[10, 12, 15], tokens=[1, 2, 3], usage={"completion_tokens": 6})
    assert event_tokens(rec, 6).tolist() == [1, 2, 3]
    values, counts = itl_samples(rec.output_times_ns, event_tokens(rec, 6))
    assert values.tolist() == [1 * MS, 1 * MS] and counts.tolist() == [2, 3]
    assert request_metrics(rec).decode_tps == pytest.approx(5 / 0.005)


def test_uneven_tokens_spread_by_cumulative_rounding():
    rec = make(times_ms=[1, 2, 3], usage={"completion_tokens": 4})
    layout = event_tokens(rec, 4)
    assert layout.sum() == 4 and set(layout.tolist()) <= {1, 2}


def test_rate_mode_keeps_both_send_and_schedule_figures():
    rec = make(t_send=5 * MS, t_sched=0, times_ms=[55, 56])
    m = request_metrics(rec)
    assert m.schedule_lag_s == pytest.approx(0.005)
    assert m.ttft_s == pytest.approx(0.050)
    assert m.ttft_sched_s == pytest.approx(0.055)


def test_distribution_percentiles_are_inverted_cdf_and_cis_bracket():
    values = list(range(1, 101))
    d = distribution(values)
    assert d["count"] == 100 and d["min"] == 1 and d["max"] == 100
    assert d["p50"] == 50 and d["p90"] == 90 and d["p99"] == 99 and d["p999"] == 100
    assert d["mean"] == pytest.approx(50.5)
    assert d["stddev"] == pytest.approx(np.std(values, ddof=1))
    lo, hi = d["mean_ci95"]
    assert lo < 50.5 < hi
    assert d["p50_ci95"][0] <= 50 <= d["p50_ci95"][1]
    assert distribution([])["count"] == 0 and distribution([])["mean"] is None
    assert distribution([None, float("nan"), 2.0])["count"] == 1


def test_summary_contract_keys_and_errors_excluded():
    ok = [make(index=i, t_send=i * MS, times_ms=[i + 10, i + 20], usage={"completion_tokens": 2}) for i in range(4)]
    bad = make(index=9, t_send=0, times_ms=[5], error="http_500", done_ms=6)
    warm = make(index=10, t_send=0, times_ms=[900, 1000], warmup=True)
    summary, per_request = summarize(ok + [bad, warm])
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s", "decode_tps"):
        assert set(summary[key]) == {"count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p999", "max",
                                     "mean_ci95", "p50_ci95"}
    assert summary["ttft_s"]["count"] == 4
    assert summary["errors"] == {"http_500": 1}
    assert summary["error_rate"] == pytest.approx(1 / 5)
    assert summary["output_tokens_total"] == 8
    assert summary["token_source"] == "usage"
    # Window: first measured send (0) to last measured end (23 ms).
    assert summary["measured_window_s"] == pytest.approx(0.023)
    assert summary["output_throughput_tps"] == pytest.approx(8 / 0.023)
    assert len(per_request) == 6


def test_steady_window_is_where_target_concurrency_was_in_flight():
    # Two users: [0, 100] and [10, 90] ms -> both in flight during [10, 90].
    a = make(index=0, t_send=0, times_ms=[50, 100])
    b = make(index=1, t_send=10 * MS, times_ms=[20, 90])
    t_send = np.asarray([a.t_send_ns, b.t_send_ns])
    finish = np.asarray([a.end_ns, b.end_ns])
    assert steady_intervals_of(t_send, finish, 2) == [(10 * MS, 90 * MS)]
    summary, _ = summarize([a, b], target_concurrency=2)
    assert summary["steady_window_s"] == pytest.approx(0.080)
    # Tokens arriving in [10, 90]: a@50, b@20, b@90 -> 3 tokens over 80 ms.
    assert summary["steady_output_throughput_tps"] == pytest.approx(3 / 0.080)


def test_time_series_counts_tokens_by_arrival_second():
    a = make(index=0, t_send=0, times_ms=[10, 1500, 2500], usage={"completion_tokens": 6})
    b = make(index=1, t_send=0, times_ms=[900, 1100], usage={"completion_tokens": 2})
    summary, _ = summarize([a, b])
    assert [(p["t_s"], p["output_tokens"], p["requests_done"]) for p in summary["time_series"]] == [
        (0, 3, 0), (1, 3, 1), (2, 2, 1)]


# ---- one rule for the token layout (first event, per-chunk trust, window end) ----------------


def test_uneven_tokens_mean_itl_equals_tpot():
    # 4 tokens over 3 events: TPOT once subtracted tokens/events (1.33) while ITL spread integers.
    rec = make(times_ms=[10, 12, 15], usage={"completion_tokens": 4})
    m = request_metrics(rec)
    summary, _ = summarize([rec])
    assert summary["itl_s"]["mean"] == pytest.approx(m.tpot_s, rel=1e-9)
    assert event_tokens(rec, 4)[0] >= 1  # TTFT's event carries the first token


def test_untrusted_per_chunk_counts_are_not_trusted_anywhere():
    # Per-chunk counts that do not add up to usage: neither TPOT nor ITL may use the first of them.
    rec = make(times_ms=[10, 12, 14], tokens=[3, 1, 1], usage={"completion_tokens": 6})
    m = request_metrics(rec)
    summary, _ = summarize([rec])
    assert event_tokens(rec, 6).tolist() == [2, 2, 2]
    assert m.tpot_s == pytest.approx(0.004 / 4)
    assert summary["itl_s"]["mean"] == pytest.approx(m.tpot_s, rel=1e-9)


def test_the_window_ends_at_the_terminal_marker_not_the_transports_close():
    # The transport finished (closed) 100 ms after the terminal marker arrived.
    rec = make(times_ms=[10, 20], usage={"completion_tokens": 2}, end_ms=30, done_ms=130)
    summary, _ = summarize([rec])
    assert summary["measured_window_s"] == pytest.approx(0.030)


def test_client_cpu_per_token_counts_every_token_the_client_read():
    from pytps.measure.metrics import client_cpu_us_per_token

    warm = make(index=0, times_ms=[1, 2], usage={"completion_tokens": 2}, warmup=True)
    measured = make(index=1, times_ms=[3, 4], usage={"completion_tokens": 2})
    _, per_request = summarize([warm, measured])
    cpu = {"wall_s": 1.0, "loop_thread_s": 0.003, "engine_thread_s": 0.001}
    # 4 ms of CPU for 4 tokens read (the warm-up's included), not for the 2 measured ones.
    tokens_read = sum(m.output_tokens for m in per_request)
    assert client_cpu_us_per_token(cpu, tokens_read) == pytest.approx(1000.0)


@st.composite
def streams(draw):
    n = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.integers(0, 5_000_000), min_size=n, max_size=n))
    times = np.cumsum(np.asarray(gaps, dtype=np.int64)) + 1_000_000
    per_chunk = draw(st.one_of(
        st.none(),
        st.lists(st.integers(0, 6), min_size=n, max_size=n),
    ))
    tokens = draw(st.integers(0, 200)) if per_chunk is None or draw(st.booleans()) else sum(per_chunk)
    return times, per_chunk, tokens


@settings(max_examples=400, deadline=None)
@given(streams())
def test_property_itl_samples_match_tpot_and_the_decode_span(stream):
    times, per_chunk, tokens = stream
    rec = make(times_ms=[], usage={"completion_tokens": tokens})
    rec.output_times_ns = times
    rec.output_tokens = np.asarray(per_chunk if per_chunk is not None else [-1] * len(times), dtype=np.int32)
    rec.output_kinds = np.zeros(len(times), dtype=np.uint8)
    rec.first_output_ns, rec.last_output_ns = int(times[0]), int(times[-1])
    rec.end_ns = rec.t_done_ns = int(times[-1])
    layout = event_tokens(rec, tokens)
    assert int(layout.sum()) == tokens and (layout >= 0).all()
    if tokens and trusted_event_counts(rec, tokens) is None:
        assert layout[0] >= 1
    values, counts = itl_samples(rec.output_times_ns, layout)
    m = request_metrics(rec)
    span = decode_span(rec.output_times_ns, layout)
    if span is None:
        assert counts.sum() == 0 and m.tpot_s is None
        return
    after_first, span_ns = span
    assert int(counts.sum()) == after_first
    assert float((values * counts).sum()) == pytest.approx(span_ns, abs=1e-6 * max(1, after_first))
    if span_ns > 0 and after_first > 0:
        mean_itl_s = float((values * counts).sum()) / counts.sum() / 1e9
        assert mean_itl_s == pytest.approx(m.tpot_s, rel=1e-9)
    else:
        assert m.tpot_s is None
