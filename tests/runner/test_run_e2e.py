"""pytps run end to end against pytps.Emulator on 127.0.0.1, checked against the emulator's truth."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

import pytps
from pytps.results.folder import SCHEMA_VERSION, load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

MS = 1_000_000
# Every transport must measure the same things the same way.
TRANSPORTS = ("asyncio", "httpx", "native")


def run_against(emu, tmp_path, **settings):
    settings.setdefault("requests", 6)
    settings.setdefault("output_tokens", 12)
    settings.setdefault("input_tokens", 32)
    cfg = make_config(emu.base_url, out=tmp_path / "out", **settings)
    result = asyncio.run(Runner(cfg, keep_records=True).run())
    truth = {t["id"]: t for t in emu.wait_truth(len(result.records))}
    return result, truth


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("api", pytps.DIALECTS)
def test_every_dialect_measures_exact_tokens(api, transport, tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, truth = run_against(emu, tmp_path, api=api, concurrency=2, transport=transport)
    assert result.metadata["transport"] == transport
    s = result.summary
    assert s["requests_ok"] == 6 and s["error_rate"] == 0
    assert s["output_tokens_total"] == 6 * 12
    assert s["token_source"] == "usage"
    for rec in result.records:
        t = truth[rec.response_id] if api != "ollama" else None
        if t is not None:
            assert rec.usage["completion_tokens"] == t["output_tokens"] == 12
            assert len(rec.output_times_ns) == len(t["sent_ns"])
    # The files are written and agree with the result.
    saved = load_results(tmp_path / "out")
    assert saved["summary"]["output_tokens_total"] == 72
    journal = load_journal(tmp_path / "out")
    assert len(journal) == 6
    # The scalar count survives in the journal beside the per-event arrays (it was once overwritten).
    assert all(line["output_tokens"] == 12 for line in journal)
    assert not (tmp_path / "out" / "events.log").exists()  # folded into events.npz
    assert saved["schema_version"] == SCHEMA_VERSION
    events = np.load(tmp_path / "out" / "events.npz")
    assert len(events["t_ns"]) == 72 and events["t_ns"].dtype == np.int64


@pytest.mark.timing
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ttft_tpot_and_tokens_match_the_truth(transport, tmp_path):
    with pytps.Emulator(ttft_ms=20, itl_us=1000) as emu:
        # Streams of 200 tokens: one scheduling hiccup of the client (a few ms on a busy box)
        # moves a stream's last stamp, and must not dominate the mean TPOT it is checked on.
        result, truth = run_against(emu, tmp_path, concurrency=1, requests=8, output_tokens=200, transport=transport)
    send_lag, kernel_send_lag, read_lag, read_after_due, tpot_err = [], [], [], [], []
    for rec in result.records:
        t = truth[rec.response_id]
        sent = t["sent_ns"]
        # The two instants of TTFT against the emulator's: our send stamp comes before the
        # emulator has the request, and our first-output stamp after it wrote the token.
        send_lag.append(t["received_ns"] - rec.t_send_ns)
        # The kernel had the request on the emulator's socket after our stamp (it is taken right
        # before the write that delivers it) and soon after.
        kernel_send_lag.append(t["received_kernel_ns"] - rec.t_send_ns)
        read_lag.append(rec.first_output_ns - sent[0])
        read_after_due.append(rec.first_output_ns - t["scheduled_ns"][0])
        true_tpot = (sent[-1] - sent[0]) / (t["output_tokens"] - t["tokens"][0])
        m = pytps.measure.metrics.request_metrics(rec)
        tpot_err.append(abs(m.tpot_s * 1e9 - true_tpot) / true_tpot)
        assert m.output_tokens == t["output_tokens"] == 200
    # Definitions, not speed: generous enough for a loaded CI box, tight enough to catch a
    # wrong instant (a role chunk, connect time or TTFT folded into TPOT are all >= 1 ms here).
    assert 0 <= np.median(send_lag) < 0.5 * MS, send_lag
    assert min(kernel_send_lag) >= 0 and np.median(kernel_send_lag) < 0.5 * MS, kernel_send_lag
    # TTFT's error against the truth seen from this client (send stamp to token written).
    # The lower bound is the write's start (its due time): on loopback a client thread woken
    # by the write can return from recv() before the emulator's write() returns and is
    # stamped (the native transport often does), so "written" is no lower bound for reads.
    assert np.median(read_after_due) >= 0, read_after_due
    assert np.median(read_lag) < 0.5 * MS, read_lag
    assert np.mean(tpot_err) < 0.01, tpot_err


def test_transports_agree_on_one_workload(tmp_path):
    """Same workload through every transport: per-request token counts equal, medians close."""
    summaries = {}
    with pytps.Emulator(ttft_ms=10, itl_us=1000) as emu:
        for transport in TRANSPORTS:
            result, _ = run_against(emu, tmp_path / transport, concurrency=2, requests=8, output_tokens=30,
                                    transport=transport, seed=3, salt="same")
            assert [r.usage["completion_tokens"] for r in sorted(result.records, key=lambda r: r.index)] == [30] * 8
            summaries[transport] = result.summary
    a = summaries["asyncio"]
    for other in TRANSPORTS[1:]:
        b = summaries[other]
        assert a["output_tokens_total"] == b["output_tokens_total"] == 240
        assert a["ttft_s"]["p50"] == pytest.approx(b["ttft_s"]["p50"], abs=0.003)
        assert a["tpot_s"]["p50"] == pytest.approx(b["tpot_s"]["p50"], rel=0.05)


def test_kernel_timestamps_are_kept_beside_the_arrival_stamps(tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, truth = run_against(emu, tmp_path, concurrency=2, requests=6, output_tokens=20,
                                    transport="native", kernel_timestamps=True)
    assert result.metadata["kernel_timestamps"] is True
    lag = result.summary["kernel_read_lag_s"]
    assert lag["count"] == 6 * 20 and lag["min"] >= 0 and lag["p50"] < 0.05
    for rec in result.records:
        sent = truth[rec.response_id]["sent_ns"]
        assert len(rec.output_kernel_times_ns) == len(rec.output_times_ns) == len(sent)
        assert np.all(rec.output_kernel_times_ns <= rec.output_times_ns)
        # The kernel had each token after the emulator started writing it (its due instant).
        assert np.all(rec.output_kernel_times_ns >= truth[rec.response_id]["scheduled_ns"])
    events = np.load(tmp_path / "out" / "events.npz")
    assert np.all(events["t_kernel_ns"] <= events["t_ns"]) and np.all(events["t_kernel_ns"] > 0)
    assert len(events["t_kernel_ns"]) == sum(len(r.output_times_ns) for r in result.records)


def test_four_tokens_per_event_give_quarter_itl_samples(tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=2000, tokens_per_event=4) as emu:
        result, _ = run_against(emu, tmp_path, concurrency=1, requests=4, output_tokens=40)
    s = result.summary
    assert s["tokens_per_event"] == pytest.approx(4.0)
    assert s["itl_s"]["count"] == 4 * (40 - 4)
    assert s["itl_s"]["p50"] == pytest.approx(0.0005, rel=0.2)
    assert s["chunk_gap_s"]["p50"] == pytest.approx(0.002, rel=0.2)


@pytest.mark.timing
def test_native_rate_mode_sends_on_time(tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, _ = run_against(emu, tmp_path, rate=50.0, arrival="constant", requests=10, output_tokens=8,
                                transport="native")
    # The engine's own timers send: late by far less than a loop tick.
    lags = [r.t_send_ns - r.t_sched_ns for r in result.records if r.t_sched_ns is not None]
    assert min(lags) >= 0 and np.median(lags) < 0.5 * MS, lags


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rate_mode_keeps_schedule_and_send_figures(transport, tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, _ = run_against(emu, tmp_path, rate=50.0, arrival="constant", requests=10, output_tokens=8,
                                transport=transport)
    s = result.summary
    if transport == "native":
        # The engine's own timers send: never early (how little late: test_native_rate_mode_sends_on_time).
        lags = [r.t_send_ns - r.t_sched_ns for r in result.records if r.t_sched_ns is not None]
        assert min(lags) >= 0, lags
    assert s["requests_ok"] == 10
    assert s["schedule_lag_s"]["count"] == 9  # the probe request has no schedule
    for key in ("ttft_sched_s", "e2e_sched_s"):
        assert s[key]["count"] == 9
    # From the schedule is never shorter than from the send, request by request. (Comparing the
    # two means compared different requests: the probe has a TTFT but no schedule.)
    for rec in result.records:
        if rec.t_sched_ns is not None:
            m = pytps.measure.metrics.request_metrics(rec)
            assert m.ttft_sched_s >= m.ttft_s - 1e-4 and m.e2e_sched_s >= m.e2e_s - 1e-4
    scheduled = [r.t_sched_ns for r in result.records if r.t_sched_ns is not None]
    gaps = np.diff(sorted(scheduled))
    assert np.allclose(gaps, 20 * MS, atol=1)  # constant arrivals at 50/s, an absolute schedule


@pytest.mark.parametrize(
    ("fault", "error_class"),
    [
        ("429:every=2", "http_429"),
        ("500:every=2", "http_500"),
        ("503:every=2", "http_503"),
        ("disconnect:every=2,after=3", "truncated"),
        ("malformed_json:every=2,after=3", "protocol"),
        ("error_event:every=2,after=3", "in_stream"),
        ("stall:every=2,seconds=2,after=2", "timeout"),
        ("slow_headers:every=2,seconds=2", "timeout"),
    ],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_faults_are_counted_by_class(fault, error_class, transport, tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=300, faults=[fault]) as emu:
        result, _ = run_against(emu, tmp_path, concurrency=1, requests=8, output_tokens=10, timeout=0.5,
                                transport=transport)
    s = result.summary
    assert s["errors"].get(error_class, 0) >= 3, s["errors"]
    assert set(s["errors"]) == {error_class}
    assert s["requests_ok"] + sum(s["errors"].values()) == 8
    assert s["error_rate"] == pytest.approx(sum(s["errors"].values()) / 8)
    # Failed requests stay out of the latency figures.
    assert s["ttft_s"]["count"] == s["requests_ok"]


def test_warmup_is_measured_but_left_out(tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        result, _ = run_against(emu, tmp_path, concurrency=1, requests=4, warmup=2, output_tokens=6)
    assert len(result.records) == 6
    assert result.summary["requests_total"] == 4
    journal = load_journal(tmp_path / "out")
    assert [line["warmup"] for line in journal] == [True, True, False, False, False, False]


def test_max_error_rate_stops_early(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=200, faults=["500:p=1"]) as emu:
        result, _ = run_against(emu, tmp_path, concurrency=1, requests=50, max_error_rate=0.2, output_tokens=4)
    assert result.stopped_reason and "max-error-rate" in result.stopped_reason
    assert len(result.records) < 50
    assert json.loads((tmp_path / "out" / "results.json").read_text())["metadata"]["stopped_reason"]


def test_api_key_never_reaches_results(tmp_path):
    secret = "sk-test-DO-NOT-LEAK-1234567890"
    with pytps.Emulator(ttft_ms=1, itl_us=200, faults=["500:every=2"]) as emu:
        cfg = make_config(emu.base_url, api_key=secret, requests=4, output_tokens=4, out=tmp_path / "out")
        asyncio.run(Runner(cfg, keep_records=True).run())
    for f in (tmp_path / "out").iterdir():
        assert secret.encode() not in f.read_bytes(), f.name


def test_local_tokenizer_counts_when_the_server_reports_no_usage(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    # A small word-level tokenizer made here (no downloads): one token per word or punctuation.
    vocab = {"[UNK]": 0}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    with pytps.Emulator(ttft_ms=2, itl_us=300) as emu:
        # Without stream_options the emulator, like OpenAI, reports no usage.
        result, truth = run_against(emu, tmp_path, concurrency=1, requests=3, output_tokens=10,
                                    extra_body={"stream_options": None}, tokenizer=path)
    s = result.summary
    assert s["token_source"] == "tokenizer"
    local = tokenizers.Tokenizer.from_file(str(path))
    for rec in result.records:
        assert rec.usage.get("completion_tokens") is None
        assert rec.tokenizer_tokens is not None and rec.tokenizer_tokens > 0
    assert result.metadata["tokenizer"] == str(path)
    assert s["output_tokens_total"] == sum(r.tokenizer_tokens for r in result.records)
    assert local.get_vocab_size() == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_clients_own_cpu_is_reported(transport, tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, _ = run_against(emu, tmp_path, concurrency=2, requests=6, output_tokens=40, transport=transport)
    cpu = result.metadata["client_cpu"]
    assert cpu["wall_s"] > 0.02 and 0 < cpu["loop_thread_s"] < 10 * cpu["wall_s"]
    if transport == "native":
        assert 0 < cpu["engine_thread_s"] < cpu["wall_s"] + 1  # one thread: at most its wall time, plus setup
    else:
        assert cpu["engine_thread_s"] is None
    per_token = (cpu["loop_thread_s"] + (cpu["engine_thread_s"] or 0)) / 240 * 1e6
    assert result.summary["client_cpu_us_per_token"] == pytest.approx(per_token)


def test_a_busy_client_thread_is_warned_about():
    from pytps.report import run_warnings

    results = {"metadata": {"client_cpu": {"wall_s": 10.0, "loop_thread_s": 9.0, "engine_thread_s": 2.0}},
               "summary": {"requests_ok": 100}}
    found = [w for w in run_warnings.collect(results) if "busy" in w]
    assert len(found) == 1 and "event loop was busy 90%" in found[0] and "--transport native" in found[0]
    results["metadata"]["client_cpu"]["loop_thread_s"] = 1.0
    assert not [w for w in run_warnings.collect(results) if "busy" in w]


def _python_calls(emu, tmp_path, transport: str, tokens: int) -> int:
    """Python function calls in this thread during one run (the profiler sees every one)."""
    import sys

    cfg = make_config(emu.base_url, requests=6, concurrency=2, output_tokens=tokens, input_tokens=16,
                      transport=transport, model="m", out=tmp_path / f"{transport}-{tokens}")
    calls = [0]

    def profile(frame, event, arg):
        if event == "call":
            calls[0] += 1

    async def main():
        sys.setprofile(profile)
        try:
            return await Runner(cfg, keep_records=True).run()
        finally:
            sys.setprofile(None)

    result = asyncio.run(main())
    assert result.summary["output_tokens_total"] == 6 * tokens
    return calls[0]


def test_no_python_runs_per_event_on_the_native_transport(tmp_path):
    with pytps.Emulator(ttft_ms=2, itl_us=100) as emu:
        _python_calls(emu, tmp_path, "native", 10)  # imports and first-use costs out of the way
        native_small, native_large = (_python_calls(emu, tmp_path, "native", n) for n in (50, 1000))
        asyncio_small, asyncio_large = (_python_calls(emu, tmp_path, "asyncio", n) for n in (50, 1000))
    extra_events = 6 * (1000 - 50)
    # The native engine reads, stamps and parses in C++: 19x the events, about the same Python.
    assert native_large - native_small < 0.05 * extra_events, (native_small, native_large)
    # The asyncio transport runs a Python callback per read: the same check sees it.
    assert asyncio_large - asyncio_small > 0.5 * extra_events, (asyncio_small, asyncio_large)
