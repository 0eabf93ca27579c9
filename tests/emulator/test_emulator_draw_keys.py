"""What keys a request's seeded draws (docs/emulator.md, "Seeds"): by default its arrival count;
with draws_by_prompt its prompt (and how many times that prompt came before), so the same item
gets the same TTFT on two emulators of one seed whatever order the requests arrive in (what
pytps rank's identical-emulators test needs: tests/app/test_rank.py)."""

from __future__ import annotations

import json

import httpx

import pytps


def _planned_ttft_ms(client: httpx.Client, url: str, prompt: str) -> float:
    """The emulator's own TTFT for one request: the llama.cpp `timings.prompt_ms` its stream carries."""
    body = {"model": "m", "max_tokens": 2, "stream": True, "messages": [{"role": "user", "content": prompt}]}
    with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: {") and '"timings"' in line:
                return float(json.loads(line[6:])["timings"]["prompt_ms"])
    raise AssertionError("no timings in the stream")


def _draws(order: list[str], by_prompt: bool = False) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], float] = {}
    emu = pytps.Emulator(ttft_ms=5, ttft_dist="normal", ttft_sd_ms=2, itl_us=10, seed=7, draws_by_prompt=by_prompt)
    with emu, httpx.Client() as client:
        for prompt in order:
            k = sum(1 for p, _ in out if p == prompt)
            out[(prompt, k)] = _planned_ttft_ms(client, emu.base_url, prompt)
    return out


def test_draws_by_prompt_give_an_item_the_same_draw_whatever_the_arrival_order() -> None:
    prompts = [f"item {i}: what is {i} + {i}?" for i in range(8)] + ["item 0: what is 0 + 0?"]  # one repeated
    forward = _draws(prompts, by_prompt=True)
    backward = _draws(list(reversed(prompts)), by_prompt=True)
    assert forward == backward
    assert len(set(forward.values())) == len(forward)  # a draw each, the repeated prompt's second one too


def test_by_default_draws_follow_the_arrival_order() -> None:
    prompts = [f"item {i}" for i in range(8)]
    forward = _draws(prompts)
    backward = _draws(list(reversed(prompts)))
    assert sorted(forward.values()) == sorted(backward.values())  # the same draws, by arrival
    assert forward != backward
