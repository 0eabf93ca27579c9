"""Embeddings, rerank and --no-stream end to end against pytps.Emulator: every figure checked
against the emulator's truth, on every transport."""

from __future__ import annotations

import asyncio

import pytest

import pytps
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

TRANSPORTS = ("asyncio", "httpx", "native")
EMBED_MS, PER_TOKEN_US = 3.0, 20.0


def _run(emu, tmp_path, **settings):
    settings.setdefault("requests", 6)
    settings.setdefault("input_tokens", 40)
    cfg = make_config(emu.base_url, out=tmp_path / "out", **settings)
    result = asyncio.run(Runner(cfg, keep_records=True).run())
    return result, emu.wait_truth(len(result.records))


def _check_against_truth(result, truth):
    """One request at a time: record i is the emulator's request i (the probe comes first)."""
    assert len(result.records) == len(truth)
    records = sorted(result.records, key=lambda r: r.t_send_ns)
    for rec, t in zip(records, truth, strict=True):
        assert rec.error is None, rec.error_detail
        assert rec.usage["prompt_tokens"] == t["prompt_tokens"]
        assert rec.inputs == t["inputs"] and rec.results == t["results"]
        assert (rec.embedding_dim or 0) == t["dimensions"]
        # The client's send precedes the emulator's receipt; its first byte comes after the answer
        # was due (the write begins then; the client may read it before the write returns).
        due = EMBED_MS * 1e6 + PER_TOKEN_US * 1e3 * t["prompt_tokens"]
        assert rec.t_send_ns <= t["received_ns"]
        assert rec.t_headers_ns >= t["scheduled_ns"][0] and rec.end_ns >= rec.t_headers_ns
        assert t["scheduled_ns"][0] - t["received_ns"] == pytest.approx(due, abs=1)
        m = pytps.measure.metrics.request_metrics(rec)
        assert m.ttfb_s * 1e9 >= due and m.e2e_s * 1e9 >= due
        assert m.ttft_s is None and m.tpot_s is None


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("api", "batch"), [("openai-embeddings", 4), ("ollama-embed", 3)])
def test_embeddings_match_the_truth(api, batch, transport, tmp_path):
    with pytps.Emulator(embed_ms=EMBED_MS, embed_us_per_token=PER_TOKEN_US, embedding_dim=48) as emu:
        result, truth = _run(emu, tmp_path, api=api, batch_size=batch, concurrency=1, transport=transport)
    _check_against_truth(result, truth)
    s = result.summary
    assert s["requests_ok"] == 6 and s["error_rate"] == 0 and s["streamed"] is False
    assert s["inputs_total"] == 6 * batch
    assert s["input_tokens_total"] == sum(t["prompt_tokens"] for t in truth)
    assert s["embedding_dim"] == 48 and s["embedding_dims"] == {"48": 6}
    window = s["measured_window_s"]
    assert s["input_throughput_per_s"] == pytest.approx(6 * batch / window)
    assert s["input_token_throughput_tps"] == pytest.approx(s["input_tokens_total"] / window)
    assert s["request_throughput_rps"] == pytest.approx(6 / window)
    assert s["ttft_s"]["count"] == 0 and s["ttfb_s"]["count"] == 6 and s["output_tokens_total"] == 0
    # Saved and journaled alike.
    saved = load_results(tmp_path / "out")
    assert saved["summary"]["inputs_total"] == 6 * batch
    assert all(line["inputs"] == batch and line["embedding_dim"] == 48 for line in load_journal(tmp_path / "out"))


def test_encoding_format_and_dimensions_pass_through(tmp_path):
    with pytps.Emulator(embed_ms=EMBED_MS, embed_us_per_token=PER_TOKEN_US) as emu:
        result, truth = _run(
            emu, tmp_path, api="openai-embeddings", batch_size=2, encoding_format="base64", dimensions=16, concurrency=1
        )
    _check_against_truth(result, truth)
    assert result.summary["embedding_dim"] == 16


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rerank_matches_the_truth(transport, tmp_path):
    with pytps.Emulator(embed_ms=EMBED_MS, embed_us_per_token=PER_TOKEN_US) as emu:
        result, truth = _run(emu, tmp_path, api="rerank", documents=5, top_n=3, concurrency=1, transport=transport)
    _check_against_truth(result, truth)
    s = result.summary
    assert s["inputs_total"] == 30 and all(t["results"] == 3 for t in truth)
    assert s["input_throughput_per_s"] == pytest.approx(30 / s["measured_window_s"])
    assert s["embedding_dim"] is None


def test_embeddings_at_concurrency_total_the_truth(tmp_path):
    with pytps.Emulator(embed_ms=EMBED_MS, embed_us_per_token=PER_TOKEN_US, max_batch=4) as emu:
        result, truth = _run(emu, tmp_path, api="openai-embeddings", batch_size=4, concurrency=8, requests=40)
    s = result.summary
    assert s["requests_ok"] == 40 and s["errors"] == {}
    assert s["input_tokens_total"] == sum(t["prompt_tokens"] for t in truth)
    assert sorted(r.usage["prompt_tokens"] for r in result.records) == sorted(t["prompt_tokens"] for t in truth)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("api", pytps.DIALECTS)
def test_no_stream_generation_matches_the_truth(api, transport, tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=500) as emu:
        result, truth = _run(emu, tmp_path, api=api, stream=False, output_tokens=12, concurrency=1, transport=transport)
    records = sorted(result.records, key=lambda r: r.t_send_ns)
    for rec, t in zip(records, truth, strict=True):
        assert rec.error is None, rec.error_detail
        assert t["stream"] is False
        assert rec.usage["completion_tokens"] == t["output_tokens"] == 12
        m = pytps.measure.metrics.request_metrics(rec)
        assert m.ttft_s is None and m.tpot_s is None and len(rec.output_times_ns) == 0
        assert rec.t_headers_ns >= t["scheduled_ns"][0] and rec.t_send_ns <= t["received_ns"]
        assert m.user_tps == pytest.approx(12 / m.e2e_s)
    s = result.summary
    assert s["streamed"] is False and s["output_tokens_total"] == 6 * 12 and s["token_source"] == "usage"
    assert s["ttft_s"]["count"] == 0 and s["itl_s"]["count"] == 0 and s["ttfb_s"]["count"] == 6
    assert s["steady_output_throughput_tps"] is None
