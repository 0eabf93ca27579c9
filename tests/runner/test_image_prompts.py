"""Image prompts (--images) against the emulator: each API's image parts are counted to prompt
tokens by the emulator's tile rule (OpenAI's, docs/emulator.md "Images"), usage reports them, and
TTFT grows with --image-size as the rule and the prefill time per token say."""

from __future__ import annotations

import asyncio
import math

import pytest

import pytps
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

pytest.importorskip("PIL")

PREFILL_US = 40.0
TTFT_MS = 2.0


def tile_tokens(w: int, h: int) -> int:
    """OpenAI's rule for detail "high", written out independently of the emulator's C++."""
    fit = min(1.0, 2048 / max(w, h))
    w, h = w * fit, h * fit
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _run(emu, tmp_path, **settings):
    cfg = make_config(emu.base_url, out=tmp_path, input_tokens=16, output_tokens=4, concurrency=1, **settings)
    result = asyncio.run(Runner(cfg, keep_records=True).run())
    return result, emu.wait_truth(len(result.records))


@pytest.mark.parametrize("fmt", ["png", "jpeg"])
@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic", "ollama"])
def test_every_api_sends_images_the_emulator_counts(api, fmt, tmp_path):
    with pytps.Emulator(ttft_ms=TTFT_MS, itl_us=200, prefill_us_per_token=PREFILL_US) as emu:
        result, truth = _run(emu, tmp_path / "r", api=api, images=2, image_size="300x900", image_format=fmt, requests=3)
    records = sorted(result.records, key=lambda r: r.t_send_ns)
    for rec, t in zip(records, truth, strict=True):
        assert rec.error is None, rec.error_detail
        assert t["images"] == rec.images == 2
        assert t["image_tokens"] == 2 * tile_tokens(300, 900)
        reported = rec.usage["prompt_tokens"] + (rec.usage.get("cached_tokens", 0) if api == "anthropic" else 0)
        assert reported == t["prompt_tokens"] > t["image_tokens"]
        assert rec.image_pixels == 2 * 300 * 900 and rec.image_bytes > 0
        due = TTFT_MS * 1e6 + PREFILL_US * 1e3 * t["prompt_tokens"]
        assert t["scheduled_ns"][0] - t["received_ns"] == pytest.approx(due, abs=1)
        assert rec.first_output_ns - rec.t_send_ns >= due
    figures = result.summary["images"]
    assert figures["images_total"] == 6 and figures["pixels_per_request_mean"] == 2 * 300 * 900


def test_ttft_grows_with_image_size_as_the_rule_says(tmp_path):
    sizes = ["256x256", "1024x1024", "2048x4096"]
    medians, tokens = [], []
    with pytps.Emulator(ttft_ms=TTFT_MS, itl_us=200, prefill_us_per_token=PREFILL_US) as emu:
        for k, size in enumerate(sizes):
            emu.truth(clear=True)
            result, truth = _run(emu, tmp_path / str(k), images=1, image_size=size, requests=5, shared_images=True)
            w, h = (int(v) for v in size.split("x"))
            assert {t["image_tokens"] for t in truth} == {tile_tokens(w, h)}
            tokens.append(tile_tokens(w, h))
            medians.append(result.summary["ttft_s"]["p50"])
    assert tokens == [255, 765, 1105]
    # Each step adds (its image tokens' difference) x the prefill time per token to TTFT, at least.
    for i in range(1, len(sizes)):
        added = (tokens[i] - tokens[i - 1]) * PREFILL_US * 1e-6
        assert medians[i] - medians[i - 1] >= added * 0.9, (medians, tokens)
    bins = result.summary["images"]["ttft_by_images"]
    assert bins[0]["images"] == 1 and bins[0]["requests"] == 5


def test_shared_images_are_the_same_bytes():
    from pytps.workload.images import ImageSpec

    shared = ImageSpec(2, "64-128", "png", shared=True, seed=1)
    unique = ImageSpec(2, "64-128", "png", shared=False, seed=1)
    assert [im.data for im in shared.images(0)] == [im.data for im in shared.images(5)]
    assert [im.data for im in unique.images(0)] != [im.data for im in unique.images(5)]
    assert [im.data for im in unique.images(3)] == [im.data for im in unique.images(3)]  # seeded
    assert all(64 <= im.width <= 128 and 64 <= im.height <= 128 for im in unique.images(7))


def test_dataset_records_may_name_image_files(tmp_path):
    import json

    from pytps.workload.images import ImageSpec

    for k, size in enumerate(["640x480", "100x2000"]):
        (tmp_path / f"im{k}.png").write_bytes(ImageSpec(1, size, "png", seed=k).images(0)[0].data)
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"prompt": "describe the picture", "images": ["im0.png", "im1.png"], "max_tokens": 4}) + "\n"
    )
    with pytps.Emulator(ttft_ms=TTFT_MS, itl_us=200) as emu:
        result, truth = _run(emu, tmp_path / "r", dataset=str(data), requests=2)
    assert all(t["images"] == 2 and t["image_tokens"] == tile_tokens(640, 480) + tile_tokens(100, 2000) for t in truth)
    assert all(r.images == 2 and r.image_pixels == 640 * 480 + 100 * 2000 for r in result.records)
