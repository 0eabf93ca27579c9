"""Text to speech in compressed formats, end to end: the emulator streams a clip PyAV encoded
(a known signal's seconds) at its real-time factor and chunk size; the native transport stamps the
reads and keeps the body; PyAV's decoder gives each read's seconds. Checked against the clip and
the emulator's truth."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("av")

import pytps  # noqa: E402
from pytps.runner.voice import VoiceResult, VoiceSettings, run_voice_sync  # noqa: E402
from pytps.workload.coded_speech import CodedSpeech, encoded_speech  # noqa: E402

# One codec frame at 24 kHz: MPEG-2 layer III 576 samples; Opus 20 ms.
FRAME_S = {"mp3": 576 / 24000, "opus": 0.020}


def _run(clip: CodedSpeech, n: int, **emu: Any) -> tuple[VoiceResult, list[dict[str, Any]]]:
    # One at a time: the truth's records come in the requests' order.
    kw = {"ttft_ms": 20, "speech_rtf": 1.0, "speech_chunk_ms": 40, **emu}
    with pytps.Emulator(speech_clips={clip.format: (clip.data, clip.seconds)}, **kw) as e:
        s = VoiceSettings(e.base_url, "openai-speech", "tts-emu", requests=n, concurrency=1, texts=("Say this.",),
                          audio_format=clip.format)
        result = run_voice_sync(s)
        truth = sorted(e.wait_truth(n), key=lambda t: int(t["received_ns"]))
    return result, truth


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_audio_seconds_are_the_signals_within_one_frame_at_rtf_1(fmt: str) -> None:
    clip = encoded_speech(fmt, 1.2)
    result, truth = _run(clip, 2)
    for row, rec, t in zip(result.rows, result.records, truth, strict=True):
        assert row["ok"], row
        assert row["audio_bytes"] == len(clip.data) == int(t["tokens"].sum())
        assert row["audio_s"] == pytest.approx(clip.seconds, abs=FRAME_S[fmt])
        # The truth's writes carry the clip's seconds; the reads are never more than the writes.
        assert float(t["write_audio_s"].sum()) == pytest.approx(clip.seconds, abs=1e-9)
        assert 1 <= row["audio_chunks"] <= len(t["sent_ns"])
        # First byte, then first playable audio (the decoder needs a whole frame, and more).
        assert row["ttfb_s"] == row["ttfa_s"] >= 0.020
        assert row["first_playable_s"] >= row["ttfa_s"]
        assert row["rtf"] == pytest.approx(row["generation_s"] / row["audio_s"])
        assert rec.body == b""  # decoded, not kept with the records
    summary = result.summary
    assert summary["ok"] == 2 and summary["figures"]["first_playable_s"]["count"] == 2
    assert summary["audio_s_total"] == pytest.approx(2 * clip.seconds, abs=2 * FRAME_S[fmt])


def test_the_player_stalls_on_decoded_seconds() -> None:
    # A 600 ms pause two thirds in, behind the 200 ms buffer, at real time: the player runs dry.
    # (How long it stalls depends on how much the decoder had at hand: the timing tier's exact
    # figures are the PCM tests'; here, that the simulation runs on the decoded seconds.)
    clip = encoded_speech("opus", 1.2)
    fault = {"kind": "stall", "every": 1, "seconds": 0.6, "after_events": 20}
    result, _ = _run(clip, 1, faults=[fault])
    row = result.rows[0]
    assert row["ok"] and row["stalls"] >= 1 and row["stalled_s"] > 0.2
    assert row["audio_s"] == pytest.approx(clip.seconds, abs=FRAME_S["opus"])


def test_a_body_that_does_not_decode_is_the_requests_protocol_error() -> None:
    # The emulator sends bytes that are not opus as "opus": the stamps are taken, the decoder fails.
    with pytps.Emulator(ttft_ms=5, speech_clips={"opus": (b"not an ogg stream" * 30, 1.0)}) as e:
        s = VoiceSettings(e.base_url, "openai-speech", "m", requests=1, texts=("x",), audio_format="opus")
        result = run_voice_sync(s)
    row = result.rows[0]
    assert not row["ok"] and row["error"] == "protocol"
    assert row["error_detail"].startswith("the opus audio could not be decoded")
    assert result.summary["errors"] == 1
