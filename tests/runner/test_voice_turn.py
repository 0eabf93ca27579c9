"""The voice turn (stt → chat → tts) against the emulator's three routes: its three stages add up to
the turn, and each stage holds its server's truth (the transcript's last write, the speech's first)."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from machine_took import check_within

import pytps
from pytps.runner.voice_turn import TurnSettings, run_turns_sync
from pytps.workload.speech_inputs import espeak_items, speakable_pieces, spoken_texts

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)"
)


def _turns() -> int:
    """The turns' stages checked against each other and the truth; returns the worst lag of a
    stage's end against its server's write (ns)."""
    items = espeak_items(spoken_texts(4, seed=5, words=8))
    with pytps.Emulator(ttft_ms=20, itl_us=4000, speech_rtf=0.5, stt_rtfx=50,
                        transcripts=[(i.audio, i.reference) for i in items]) as emu:
        u = emu.base_url
        result = run_turns_sync(TurnSettings(u, u, u, "stt", "chat", "tts", tuple(items), turns=4, concurrency=2))
        truth = emu.wait_truth(4 + 4 + 4 * 4)
    by_api: dict[str, list[dict[str, Any]]] = {}
    for t in truth:
        by_api.setdefault(t["api"], []).append(t)
    assert result.summary["ok"] == 4
    worst_ns = 0
    for row in result.rows:
        # Exactly: the stages are consecutive intervals of one clock.
        parts = row["t_transcript_ns"] - row["t_speech_end_ns"], row["t_piece_ns"] - row["t_transcript_ns"], row["t_audio_ns"] - row["t_piece_ns"]
        assert sum(parts) == row["t_audio_ns"] - row["t_speech_end_ns"]
        assert row["stt_s"] + row["chat_s"] + row["tts_s"] == pytest.approx(row["turn_s"], abs=1e-9)
        assert all(p > 0 for p in parts)
        # The final transcript is the emulator's last write of that stream; the first audio, the
        # first write of a speech stream received after the piece was ready. Truth stamps a write
        # when its call returned, so a client may read it a moment before: compared both ways.
        stt = next(t for t in by_api["transcriptions"] if t["transcript"] == row["transcript"])
        lag = row["t_transcript_ns"] - int(stt["sent_ns"][-1])
        speech = [t for t in by_api["speech"] if t["received_ns"] >= row["t_piece_ns"]]
        first_audio_lag = min(abs(row["t_audio_ns"] - int(t["sent_ns"][0])) for t in speech)
        worst_ns = max(worst_ns, abs(lag), first_audio_lag)
    return worst_ns


def test_voice_turn_stages_add_up_and_follow_the_truth() -> None:
    assert _turns() < 50_000_000  # the default tier: the same write, on a busy machine


@pytest.mark.timing
def test_voice_turn_stages_within_a_millisecond_of_truth() -> None:
    check_within(1e-3, lambda: _turns() / 1e9, "a stage's end against its server's write")


def test_speakable_pieces_by_sentence_or_word_count() -> None:
    assert speakable_pieces("Hi there. How are", 12) == (["Hi there."], " How are")
    assert speakable_pieces("a b c d e", 2) == (["a b", "c d"], " e")
    assert speakable_pieces("no end yet", 12) == ([], "no end yet")
