"""The emulator's prefix cache: an LRU of prompt blocks whose hits skip prefill, recorded in the
truth and reported in usage the way OpenAI and Anthropic report them; and pytps reading them out."""

from __future__ import annotations

import httpx
import pytest

import pytps
from pytps.results.folder import load_journal
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner

WORD = "abcdefg "  # 8 bytes: 2 emulator tokens


def chat(emu: pytps.Emulator, text: str, api: str = "chat") -> dict:
    if api == "chat":
        body = {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 2}
        r = httpx.post(f"{emu.base_url}/v1/chat/completions", json=body)
    else:
        body = {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 2}
        r = httpx.post(f"{emu.base_url}/v1/messages", json=body)
    r.raise_for_status()
    usage: dict = r.json()["usage"]
    return usage


def test_blocks_hit_behind_the_same_prefix_and_the_lru_evicts():
    # Blocks of 16 tokens = 64 bytes; capacity 8 blocks.
    with pytps.Emulator(ttft_ms=0, itl_us=10, prefix_cache_tokens=128, prefix_cache_block_tokens=16) as emu:
        a = "user" + WORD * 60  # "user" (the role) + 480 bytes: 7 full blocks
        first = chat(emu, a[4:])
        assert first["prompt_tokens_details"] == {"cached_tokens": 0} and first["prompt_tokens"] == 121
        again = chat(emu, a[4:] + "more words here")
        assert again["prompt_tokens_details"]["cached_tokens"] == 7 * 16
        # The same bytes after a different start: no block matches (each key covers its prefix).
        shifted = chat(emu, "X" + a[5:])
        assert shifted["prompt_tokens_details"]["cached_tokens"] == 0
        # The shifted prompt's 7 blocks pushed most of a's out of the 8-block cache.
        assert chat(emu, a[4:])["prompt_tokens_details"]["cached_tokens"] < 7 * 16
        truth = emu.wait_truth(4)
        assert [t["cached_tokens"] for t in truth][:3] == [0, 112, 0]
    # Without a cache the usage has no details, as before.
    with pytps.Emulator(ttft_ms=0, itl_us=10) as emu:
        assert "prompt_tokens_details" not in chat(emu, a)


def test_a_prompt_found_whole_still_computes_its_last_block():
    with pytps.Emulator(ttft_ms=0, itl_us=10, prefix_cache_tokens=1024, prefix_cache_block_tokens=16) as emu:
        text = WORD * 31 + "abcd"  # with the role "user": 256 bytes = 64 tokens = 4 blocks exactly
        chat(emu, text)
        usage = chat(emu, text)
        assert usage["prompt_tokens"] == 64 and usage["prompt_tokens_details"]["cached_tokens"] == 48


def test_cached_prefix_skips_its_share_of_prefill():
    with pytps.Emulator(ttft_ms=1, itl_us=10, prefill_us_per_token=100, prefix_cache_tokens=4096) as emu:
        text = WORD * 200  # ~400 tokens: 40 ms of prefill uncached
        chat(emu, text)
        chat(emu, text + "tail")
        cold, warm = emu.wait_truth(2)
    for t in (cold, warm):
        # A body (no stream) is due with its last token: one 10 µs gap after the first.
        first_token = t["scheduled_ns"][0] - t["admitted_ns"] - 10_000
        assert first_token == 1_000_000 + 100_000 * (t["prompt_tokens"] - t["cached_tokens"])
    assert warm["cached_tokens"] > 350


def test_anthropic_usage_reports_cache_reads_apart_from_input_tokens():
    with pytps.Emulator(ttft_ms=0, itl_us=10, prefix_cache_tokens=4096) as emu:
        chat(emu, WORD * 50, api="messages")
        usage = chat(emu, WORD * 50 + "and more", api="messages")
        truth = emu.wait_truth(2)[-1]
    assert usage["cache_read_input_tokens"] == truth["cached_tokens"] > 0
    assert usage["input_tokens"] == truth["prompt_tokens"] - truth["cached_tokens"]
    assert usage["cache_creation_input_tokens"] == 0


@pytest.mark.parametrize("api", ["openai-chat", "anthropic", "openai-responses", "openai-completions"])
def test_pytps_reads_the_cached_tokens_out_of_each_apis_usage(tmp_path, api):
    with pytps.Emulator(ttft_ms=1, itl_us=50, prefix_cache_tokens=1 << 16) as emu:
        cfg = make_config(emu.base_url, api=api, requests=6, input_tokens=300, output_tokens=4,
                          shared_prefix_tokens=200, out=tmp_path / api, salt="c")
        summary = run_coroutine(Runner(cfg).run()).summary
        truth = {t["id"]: t for t in emu.wait_truth(6)}
    journal = load_journal(tmp_path / api)
    assert len(journal) == 6
    for line in journal:
        t = truth[line["response_id"]]
        assert line["usage"]["cached_tokens"] == t["cached_tokens"]
        # The prompt pytps counts includes cache reads for every API (Anthropic's input_tokens do not).
        prompt = line["usage"]["prompt_tokens"] + (t["cached_tokens"] if api == "anthropic" else 0)
        assert prompt == t["prompt_tokens"]
    cached = sum(t["cached_tokens"] for t in truth.values())
    prompt = sum(t["prompt_tokens"] for t in truth.values())
    assert cached > 0 and summary["cache"]["hit_rate"] == pytest.approx(cached / prompt, rel=1e-12)
