"""Token agreement (issue 39): asked, streamed and billed output tokens per request, and a planted
billing error counted on every request and warned once."""

from __future__ import annotations

import asyncio

import pytest

import pytps
from pytps.report.run_warnings import collect
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner


def _run(tmp_path, **emulator):
    with pytps.Emulator(ttft_ms=2, itl_us=300, **emulator) as emu:
        cfg = make_config(
            emu.base_url + "/v1", out=tmp_path / "out", requests=10, concurrency=2, input_tokens=16, output_tokens=40
        )
        asyncio.run(Runner(cfg).run())
    return load_results(tmp_path / "out"), load_journal(tmp_path / "out")


def test_an_honest_server_agrees(tmp_path):
    results, lines = _run(tmp_path)
    assert [(x["tokens_asked"], x["tokens_streamed"], x["tokens_billed"]) for x in lines] == [(40, 40, 40)] * 10
    assert {x["tokens_streamed_source"] for x in lines} == {"events"}
    s = results["summary"]
    assert s["token_mismatches"] == 0 and s["token_mismatch_max"] is None
    assert not [w for w in collect(results) if "billed" in w]


def test_a_planted_overbill_is_counted_on_every_request_and_warned_once(tmp_path):
    results, lines = _run(tmp_path, usage_overbill=0.1)
    assert [(x["tokens_asked"], x["tokens_streamed"], x["tokens_billed"]) for x in lines] == [(40, 40, 44)] * 10
    s = results["summary"]
    assert s["token_mismatches"] == 10 and s["token_mismatch_max"] == 4
    warned = [w for w in collect(results) if "billed" in w]
    assert len(warned) == 1 and "10 of 10" in warned[0] and "+4" in warned[0]
    assert "\n" not in warned[0]


def test_the_emulator_refuses_a_negative_overbill():
    with pytest.raises(ValueError, match="usage_overbill"):
        pytps.Emulator(usage_overbill=-0.1)
