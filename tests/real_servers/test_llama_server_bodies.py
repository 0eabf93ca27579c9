"""Embeddings and non-streaming chat against a real llama.cpp `llama-server` (the tiny generated
model), judged by the server's own counts: usage, its body's timings, and /metrics."""

from __future__ import annotations

import re
import time
import urllib.request
from typing import Any

import pytest

import pytps
from pytps.results.folder import load_journal

pytestmark = pytest.mark.real_server

TRANSPORTS = ("native", "asyncio", "httpx")


def prompt_tokens_total(url: str) -> float:
    """llamacpp:prompt_tokens_total from the server's /metrics (a plain GET; the scraper is pytps's
    --server-metrics)."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    match = re.search(r"^llamacpp:prompt_tokens_total\s+(\S+)$", text, re.M)
    assert match, "no llamacpp:prompt_tokens_total in /metrics"
    return float(match.group(1))


def _figures(summary: dict[str, Any]) -> str:
    e2e = summary["e2e_s"]
    return (
        f"{summary['request_throughput_rps']:.1f} req/s, E2E p50 {e2e['p50'] * 1e3:.2f} ms p99 {e2e['p99'] * 1e3:.2f} ms, "
        f"{summary.get('input_throughput_per_s') or 0:.1f} inputs/s, errors {summary['errors']}"
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_embeddings_at_concurrency_8_count_every_input_token(llama_embedding_server, transport, tmp_path):
    url = llama_embedding_server
    before = prompt_tokens_total(url)
    t0 = time.monotonic()
    result = pytps.run(
        url, api="openai-embeddings", batch_size=4, concurrency=8, requests=100, input_tokens=64,
        transport=transport, out=tmp_path / "r", progress=None,
    )  # fmt: skip
    s = result.summary
    print(f"\n[{transport}] embeddings x4 at c=8: {_figures(s)}, dim {s['embedding_dim']}, {time.monotonic() - t0:.1f} s")
    assert s["errors"] == {} and s["requests_ok"] == 100
    lines = load_journal(result.out_dir)
    assert all(line["usage"]["prompt_tokens"] == line["prompt_tokens"] > 0 for line in lines)
    assert s["input_tokens_total"] == sum(line["prompt_tokens"] for line in lines if not line["warmup"])
    assert s["inputs_total"] == 400 and s["embedding_dim"] and s["embedding_dim"] > 0
    delta = prompt_tokens_total(url) - before
    every = sum(line["prompt_tokens"] for line in lines)  # the probe and any warm-up too
    print(f"[{transport}] llamacpp:prompt_tokens_total delta {delta:g}, pytps's input tokens {every}")
    assert delta == every


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_non_streaming_chat_counts_exact_output_tokens(llama_server, transport, tmp_path):
    result = pytps.run(
        llama_server, api="openai-chat", stream=False, concurrency=4, requests=20, input_tokens=32,
        output_tokens=24, transport=transport, out=tmp_path / "r", progress=None,
    )  # fmt: skip
    s = result.summary
    print(f"\n[{transport}] non-streaming chat, 24 tokens at c=4: {_figures(s)}")
    assert s["errors"] == {} and s["streamed"] is False and s["ttft_s"]["count"] == 0
    for line in load_journal(result.out_dir):
        st = line["server_timings"]
        assert line["token_source"] == "usage"
        assert line["output_tokens"] == line["usage"]["completion_tokens"] == st["decode_tokens"], line
