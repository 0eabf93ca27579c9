"""Voice runs against the emulator's audio routes, checked against its truth: text to speech's
audio seconds, time to first audio, RTF and the player's stalls; speech to text's transcript
and WER on espeak-ng speech with planted word errors, in both streamed shapes and unstreamed."""

from __future__ import annotations

import shutil
import sys
from typing import Any

import numpy as np
import pytest
from machine_took import check_within

import pytps
from pytps.measure.voice import simulate_playback
from pytps.runner.voice import VoiceResult, VoiceSettings, run_voice_sync
from pytps.workload.speech_inputs import espeak_items, spoken_texts


def _texts(n: int, base_words: int = 4) -> tuple[str, ...]:
    # Each text one word longer than the last: every request's audio has its own length, by which
    # its truth record is found.
    return tuple(" ".join(["word"] * (base_words + i)) for i in range(n))


def _tts(emu: pytps.Emulator, n: int, concurrency: int, **kw: Any) -> tuple[VoiceResult, dict[int, dict[str, Any]]]:
    s = VoiceSettings(emu.base_url, "openai-speech", "tts-emu", requests=n, concurrency=concurrency,
                      texts=_texts(n, kw.pop("base_words", 4)), **kw)
    result = run_voice_sync(s)
    by_bytes = {int(t["tokens"].sum()): t for t in emu.wait_truth(n)}
    assert len(by_bytes) == n
    return result, by_bytes


def _truth_playback(t: dict[str, Any], buffer_ms: float = 200.0) -> Any:
    return simulate_playback(t["sent_ns"], t["tokens"] / t["audio_bytes_per_s"], buffer_ms)


@pytest.mark.parametrize("fmt", [("pcm", "audio"), ("wav", "audio"), ("pcm", "sse")])
def test_tts_audio_and_chunks_equal_the_truth(fmt: tuple[str, str]) -> None:
    with pytps.Emulator(ttft_ms=15, speech_rtf=0.5, speech_chunk_ms=40, speech_words_per_s=10) as emu:
        result, truth = _tts(emu, 4, 2, audio_format=fmt[0], stream_format=fmt[1])
    for row, rec in zip(result.rows, result.records, strict=True):
        assert row["ok"], row
        t = truth[row["audio_bytes"]]
        assert row["audio_s"] == pytest.approx(t["tokens"].sum() / t["audio_bytes_per_s"], abs=1e-12)
        # Loopback may merge two writes into one read, never split a count: reads <= writes.
        assert 1 <= row["audio_chunks"] <= len(t["sent_ns"])
        assert rec.output_times_ns[0] >= rec.t_send_ns
        assert row["ttfa_s"] >= 0.015 and row["rtf"] > 0
        if fmt[0] == "wav":
            assert row["ttfb_s"] <= row["ttfa_s"]


@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac"])
def test_tts_refuses_compressed_formats_in_one_line_without_the_decoder(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PyAV not installed: `import av` fails (a None entry in sys.modules makes it raise ImportError).
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(pytps.errors.ConfigError, match="pcm and wav") as e:
        VoiceSettings("http://127.0.0.1:1", "openai-speech", "m", texts=("a",), audio_format=fmt).check()
    assert "\n" not in str(e.value) and f"--audio-format {fmt}" in str(e.value) and "pytps[voice]" in str(e.value)


@pytest.mark.timing
@pytest.mark.parametrize("rtf", [0.5, 1.0, 1.2])
@pytest.mark.parametrize("concurrency", [1, 16])
def test_tts_ttfa_rtf_within_a_millisecond_of_truth(rtf: float, concurrency: int) -> None:
    def worst_error_s() -> float:
        n = 16
        with pytps.Emulator(ttft_ms=20, speech_rtf=rtf, speech_chunk_ms=40, speech_words_per_s=10) as emu:
            result, truth = _tts(emu, n, concurrency)
        worst = 0.0
        for row in result.rows:
            t = truth[row["audio_bytes"]]
            true_ttfa = (t["sent_ns"][0] - t["received_ns"]) / 1e9
            true_gen = (t["sent_ns"][-1] - t["received_ns"]) / 1e9
            audio_s = t["tokens"].sum() / t["audio_bytes_per_s"]
            assert row["audio_s"] == pytest.approx(audio_s, abs=1e-12)
            # TTFA's error, and RTF's as time (generation = RTF x audio seconds)
            worst = max(worst, abs(row["ttfa_s"] - true_ttfa), abs(row["rtf"] - true_gen / audio_s) * audio_s)
        return worst

    check_within(1e-3, worst_error_s, "TTFA or generation time against the truth")


@pytest.mark.timing
def test_a_planted_300ms_stall_behind_200ms_is_one_stall_of_100ms() -> None:
    # Real time (RTF 1.0): the buffer's margin stays 200 ms until the last chunk comes 300 ms late.
    words = 20  # 2 s of audio: 50 chunks of 40 ms
    fault = {"kind": "stall", "every": 1, "seconds": 0.3, "after_events": 49}
    with pytps.Emulator(ttft_ms=20, speech_rtf=1.0, speech_chunk_ms=40, speech_words_per_s=10, faults=[fault]) as emu:
        result, truth = _tts(emu, 1, 1, base_words=words)
    row = result.rows[0]
    assert row["audio_chunks"] == 50
    assert row["stalls"] == 1
    assert row["stall_ms"][0] == pytest.approx(100.0, abs=2.0)
    assert _truth_playback(truth[row["audio_bytes"]]).stalls == 1


@pytest.mark.timing
def test_stall_count_at_rtf_1_2_equals_the_truths() -> None:
    # 30 ms chunks, so the margin (falling 6 ms a chunk) never sits on zero at a chunk.
    with pytps.Emulator(ttft_ms=20, speech_rtf=1.2, speech_chunk_ms=30, speech_words_per_s=10) as emu:
        result, truth = _tts(emu, 4, 4, base_words=20)
    counts = [(row["stalls"], _truth_playback(truth[row["audio_bytes"]]).stalls) for row in result.rows]
    assert all(a == b > 0 for a, b in counts), counts


needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")


@pytest.fixture(scope="module")
def utterances() -> list[Any]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    return espeak_items(spoken_texts(100, seed=36, words=9))


@needs_espeak
@pytest.mark.parametrize("shape", ["openai", "vllm", "unstreamed"])
def test_stt_wer_equals_the_planted_rate(utterances: list[Any], shape: str) -> None:
    items = utterances
    with pytps.Emulator(
        ttft_ms=5, stt_rtfx=200, stt_word_error_rate=0.3, stt_vllm_shape=shape == "vllm",
        transcripts=[(i.audio, i.reference) for i in items], stt_words_per_event=2,
    ) as emu:
        s = VoiceSettings(emu.base_url, "openai-transcriptions", "whisper-emu", requests=len(items), concurrency=8,
                          items=tuple(items), stream=shape != "unstreamed")
        result = run_voice_sync(s)
        truth = emu.wait_truth(len(items))
    assert result.summary["ok"] == len(items)
    planted = sum(t["planted_errors"] for t in truth)
    words = sum(t["transcript_words"] for t in truth)
    assert planted > 0
    assert result.summary["word_errors"] == planted and result.summary["ref_words"] == words
    assert result.summary["wer"] == planted / words
    sent = {t["transcript"] for t in truth}
    assert {row["text"] for row in result.rows} == sent
    for row in result.rows:
        assert row["final_s"] > 0 and row["rtfx"] == pytest.approx(row["input_audio_s"] / row["final_s"])
        if shape == "unstreamed":
            assert row["first_text_s"] is None
        else:
            assert 0 < row["first_text_s"] <= row["final_s"]
