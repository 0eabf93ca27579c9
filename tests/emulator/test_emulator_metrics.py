"""The emulator's /metrics serves its truth: every counter equals what the truth records add up
to, the load model's batch and queue are the gauges, and with a power model a run's joules per
output token (pytps's figure, from the energy counter it scraped) is the closed form's."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

import pytps
from pytps.measure.server_metrics import parse_exposition


def _scrape(emu: pytps.Emulator) -> dict[str, float]:
    with urllib.request.urlopen(emu.base_url + "/metrics", timeout=5) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        _, samples = parse_exposition(resp.read().decode())
    out: dict[str, float] = {}
    for name, labels, value in samples:
        key = name + (f"{{le={labels['le']}}}" if "le" in labels else "")
        out[key] = out.get(key, 0.0) + value
    return out


def test_counters_are_the_truth_added_up(tmp_path):
    with pytps.Emulator(prefix_cache_tokens=100_000, ttft_ms=5, itl_us=200) as emu:
        before = _scrape(emu)
        assert before["vllm:generation_tokens_total"] == 0
        assert "DCGM_FI_DEV_POWER_USAGE" not in before  # no power model, no power metrics
        pytps.run(
            emu.base_url, requests=20, concurrency=4, output_tokens=16, shared_prefix_tokens=64,
            out=tmp_path / "run", store=False,
        )  # fmt: skip
        truth = emu.truth()
        after = _scrape(emu)
    assert after["vllm:generation_tokens_total"] == sum(t["output_tokens"] for t in truth)
    assert after["vllm:prompt_tokens_total"] == sum(t["prompt_tokens"] for t in truth)
    assert after["vllm:prefix_cache_hits_total"] == sum(t["cached_tokens"] for t in truth) > 0
    assert after["vllm:prefix_cache_queries_total"] == after["vllm:prompt_tokens_total"]
    assert after["vllm:request_success_total"] == len(truth)
    ttfts = [(t["sent_ns"][0] - t["received_ns"]) / 1e9 for t in truth]
    assert after["vllm:time_to_first_token_seconds_count"] == len(truth)
    assert after["vllm:time_to_first_token_seconds_sum"] == pytest.approx(sum(ttfts))
    assert after["vllm:time_to_first_token_seconds_bucket{le=0.01}"] == sum(x <= 0.01 for x in ttfts)
    assert after["vllm:num_requests_running"] == after["vllm:num_requests_waiting"] == 0


def test_gauges_are_the_load_model_and_the_power_model():
    with pytps.Emulator(max_batch=2, ttft_ms=300, itl_us=1000, power_idle_w=40, power_per_stream_w=25) as emu:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})

        def one() -> None:
            req = urllib.request.Request(
                emu.base_url + "/v1/chat/completions", body.encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()

        threads = [threading.Thread(target=one) for _ in range(5)]
        for t in threads:
            t.start()
        time.sleep(0.15)  # all five arrived; two hold slots, three wait, none has a token yet
        mid = _scrape(emu)
        for t in threads:
            t.join()
    assert mid["vllm:num_requests_running"] == 2
    assert mid["vllm:num_requests_waiting"] == 3
    assert mid["DCGM_FI_DEV_POWER_USAGE"] == 40 + 2 * 25


@pytest.mark.parametrize("transport", ["native", "asyncio"])
def test_joules_per_output_token_is_the_closed_form(tmp_path, transport):
    idle_w, per_stream_w = 60.0, 15.0
    with pytps.Emulator(power_idle_w=idle_w, power_per_stream_w=per_stream_w, ttft_ms=20, itl_us=2000) as emu:
        result = pytps.run(
            emu.base_url, requests=40, concurrency=4, output_tokens=32, transport=transport,
            server_metrics=True, server_metrics_interval=0.1, out=tmp_path / "run", store=False,
        )  # fmt: skip
        truth = emu.truth()
    with open(result.out_dir / "server_metrics.jsonl", encoding="utf-8") as f:
        scrapes = [json.loads(line) for line in f]
    span_s = (scrapes[-1]["t_ns"] - scrapes[0]["t_ns"]) / 1e9
    slot_s = sum(t["released_ns"] - t["admitted_ns"] for t in truth if t["admitted_ns"]) / 1e9
    tokens = sum(t["output_tokens"] for t in truth)
    closed_form = (idle_w * span_s + per_stream_w * slot_s) / tokens
    sm = result.summary["server_metrics"]
    assert sm["energy"]["source"] == "energy counter"
    assert result.summary["joules_per_output_token"] == pytest.approx(closed_form, rel=0.01)
    assert result.summary["output_tokens_per_joule"] == pytest.approx(1 / closed_form, rel=0.01)
    assert sm["token_cross_check"]["equal"]
    assert sm["token_cross_check"]["client_output_tokens"] == tokens
