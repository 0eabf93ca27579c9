"""POST /reset_prefix_cache (vLLM's route): every cached prompt block is forgotten, so the next
prompt that repeats one is computed whole again (0 cached tokens in the truth); and the first
accepted connection is stamped (stats' first_accept_ns), what a launcher's readiness is checked against."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

import pytps


def _chat(url: str, prompt: str) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 2})
    req = urllib.request.Request(url + "/v1/chat/completions", body.encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def _post(url: str, path: str, method: str = "POST") -> tuple[int, bytes]:
    req = urllib.request.Request(url + path, b"" if method == "POST" else None, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_reset_forgets_every_block() -> None:
    prompt = "word " * 400  # 2000 bytes: 500 emulator tokens, 31 full blocks of 16
    with pytps.Emulator(prefix_cache_tokens=100_000, ttft_ms=1, itl_us=100) as emu:
        _chat(emu.base_url, prompt)
        _chat(emu.base_url, prompt)
        assert _post(emu.base_url, "/reset_prefix_cache") == (200, b'{"status":"ok"}')
        _chat(emu.base_url, prompt)
        _chat(emu.base_url, prompt)
        truth = emu.wait_truth(4)
        stats = emu.stats()
    cached = [t["cached_tokens"] for t in truth]
    assert cached[0] == 0 and cached[1] > 0  # a repeat hits the cache
    assert cached[2] == 0, "the reset left blocks in the cache"
    assert cached[3] == cached[1]  # and the cache fills again as before
    assert stats["prefix_cache_resets"] == 1


def test_reset_takes_post_only_and_a_cacheless_emulator_answers_it() -> None:
    with pytps.Emulator(ttft_ms=1) as emu:
        status, body = _post(emu.base_url, "/reset_prefix_cache", method="GET")
        assert status == 405 and b"use POST" in body
        assert _post(emu.base_url, "/reset_prefix_cache")[0] == 200


def test_first_accept_is_stamped_once_on_the_monotonic_clock() -> None:
    with pytps.Emulator(ttft_ms=1) as emu:
        assert emu.stats()["first_accept_ns"] == 0
        before = time.monotonic_ns()
        _post(emu.base_url, "/health", method="GET")
        after = time.monotonic_ns()
        first = emu.stats()["first_accept_ns"]
        _post(emu.base_url, "/health", method="GET")
        assert emu.stats()["first_accept_ns"] == first
    assert before <= first <= after
    assert first == pytest.approx(before, abs=50e6)
