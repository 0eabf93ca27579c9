"""pytps.instrument on the OpenAI SDK's embeddings and non-streaming calls: a record with the same
figures as `pytps run --api openai-embeddings`, checked against the emulator's truth."""

from __future__ import annotations

import asyncio

import pytest

import pytps
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

openai = pytest.importorskip("openai")


def test_sdk_embeddings_record_the_run_figures(tmp_path):
    texts = ["the quick brown fox jumps over the lazy dog " * 8] * 4
    with pytps.Emulator(embed_ms=3, embed_us_per_token=20, embedding_dim=64) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument())
        for _ in range(3):
            reply = client.embeddings.create(model="m", input=texts)  # the SDK asks for base64 by default
            assert len(reply.data) == 4 and len(reply.data[0].embedding) == 64
        records = client._client.collector.records
        truth = emu.wait_truth(3)
        cfg = make_config(emu.base_url, api="openai-embeddings", batch_size=4, requests=3, concurrency=1,
                          out=tmp_path / "r")  # fmt: skip
        run = asyncio.run(Runner(cfg, keep_records=True).run())
    assert len(records) == 3
    for r, t in zip(records, truth, strict=True):
        assert r.ok and not r.streamed and r.stream is False
        assert r.inputs == t["inputs"] == 4 and r.embedding_dim == t["dimensions"] == 64
        assert r.prompt_tokens == r.usage["prompt_tokens"] == t["prompt_tokens"]
        assert r.ttft_s is None and r.ttfb_s is not None and r.e2e_s >= r.ttfb_s
        due_s = (t["scheduled_ns"][0] - t["received_ns"]) / 1e9
        assert r.e2e_s >= due_s == pytest.approx(0.003 + 20e-6 * t["prompt_tokens"], abs=1e-9)
        assert r.token_source == "none" and r.output_tokens == 0
    s = client._client.collector.summary()
    # The same keys, computed by the same code, as the run's summary.
    for key in ("inputs_total", "input_tokens_total", "embedding_dim", "streamed", "requests_ok"):
        assert key in run.summary
    assert s["inputs_total"] == 12 and s["embedding_dim"] == 64 and s["streamed"] is False
    assert s["input_tokens_total"] == sum(t["prompt_tokens"] for t in truth)
    assert s["ttfb_s"]["count"] == 3 and s["ttft_s"]["count"] == 0


def test_sdk_non_streaming_chat_reads_usage_and_text():
    with pytps.Emulator(ttft_ms=2, itl_us=200) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument())
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=9)
        (r,) = client._client.collector.records
        (t,) = emu.wait_truth(1)
    assert reply.usage.completion_tokens == 9
    assert r.ok and r.output_tokens == 9 == t["output_tokens"] and r.token_source == "usage"
    assert r.prompt_tokens == t["prompt_tokens"] and r.finish_reason == "length"
