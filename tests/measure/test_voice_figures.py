"""The voice formulas on exact inputs: the simulated player, the speech figures, WER and CER."""

from __future__ import annotations

import numpy as np
import pytest

from pytps.measure.records import RequestRecord
from pytps.measure.voice import PcmFormat, simulate_playback, speech_figures, transcript_errors

MS = 1_000_000


def test_a_stream_at_playback_speed_never_stalls() -> None:
    times = [i * 40 * MS for i in range(50)]
    p = simulate_playback(times, [0.04] * 50, 200)
    assert p.start_ns == 200 * MS and p.stalls == 0 and p.stalled_s == 0


def test_a_gap_longer_than_the_buffer_stalls_by_the_difference() -> None:
    # 40 ms chunks at real time; chunk 10 comes 300 ms late: the 200 ms buffer covers 200 of it.
    times = [i * 40 * MS + (300 * MS if i >= 10 else 0) for i in range(20)]
    p = simulate_playback(times, [0.04] * 20, 200)
    assert p.stall_ns == (100 * MS,)
    assert p.stall_at_ns == (200 * MS + 400 * MS,)


def test_a_slow_stream_stalls_once_per_chunk_after_the_buffer_is_spent() -> None:
    # RTF 1.2: 30 ms of audio every 36 ms. The buffer's margin falls 6 ms a chunk: gone after 34.
    times = [i * 36 * MS for i in range(60)]
    p = simulate_playback(times, [0.03] * 60, 200)
    margins = [200 + 30 * i - 36 * i for i in range(60)]
    assert p.stalls == sum(1 for m in margins if m < 0)
    assert all(d == 6 * MS for d in p.stall_ns[1:])


def test_a_stream_shorter_than_the_buffer_starts_at_the_buffer() -> None:
    p = simulate_playback([5 * MS], [0.01], 200)
    assert p.start_ns == 205 * MS and p.stalls == 0
    assert simulate_playback([], [], 200).stalls == 0


def test_speech_figures_from_a_record() -> None:
    rec = RequestRecord(index=0, t_send_ns=1_000 * MS)
    rec.output_times_ns = np.array([1_050 * MS, 1_090 * MS, 1_130 * MS], dtype=np.int64)
    rec.output_chars = np.array([1, 1919, 1920], dtype=np.int32)  # 24 kHz s16 mono: 1920 bytes = 40 ms
    rec.first_body_ns = 1_040 * MS  # a WAV header came first
    rec.audio_format = {"sample_rate": 24000, "channels": 1, "bits_per_sample": 16, "format_tag": 1}
    f = speech_figures(rec, PcmFormat(16000), 200)
    assert f.ttfb_s == pytest.approx(0.040) and f.ttfa_s == pytest.approx(0.050)
    assert f.first_playable_s == pytest.approx(0.090)  # one byte is not a sample
    assert f.audio_s == pytest.approx(0.080) and f.audio_bytes == 3840
    assert f.generation_s == pytest.approx(0.130) and f.rtf == pytest.approx(0.130 / 0.080)
    assert f.inverse_rtf == pytest.approx(0.080 / 0.130)


def test_reads_of_no_seconds_are_no_audio_to_the_player() -> None:
    # A compressed stream: the decoder gave nothing for the first two reads; the buffer starts at
    # the third, the first playable audio.
    p = simulate_playback([0, 20 * MS, 60 * MS, 100 * MS, 900 * MS], [0.0, 0.0, 0.5, 0.0, 0.5], 200)
    assert p.start_ns == 260 * MS
    assert p.stall_at_ns == (760 * MS,) and p.stall_ns == (140 * MS,)  # the empty read ends no stall


def test_speech_figures_of_a_compressed_stream_take_the_decoders_seconds() -> None:
    from pytps.measure.audio_codec import DecodedReads

    rec = RequestRecord(index=0, t_send_ns=1_000 * MS)
    rec.output_times_ns = np.array([1_050 * MS, 1_090 * MS, 1_130 * MS], dtype=np.int64)
    rec.output_chars = np.array([400, 400, 400], dtype=np.int32)
    decoded = DecodedReads((0.0, 0.072, 0.048), 24000)
    f = speech_figures(rec, PcmFormat(), 200, decoded)
    assert f.ttfb_s == f.ttfa_s == pytest.approx(0.050)
    assert f.first_playable_s == pytest.approx(0.090)
    assert f.audio_s == pytest.approx(0.120) and f.audio_bytes == 1200 and f.chunks == 3
    assert f.rtf == pytest.approx(0.130 / 0.120)
    assert f.playback.start_ns == 1_290 * MS and f.playback.stalls == 0


def test_transcript_errors_count_substitutions_deletions_insertions() -> None:
    e = transcript_errors("the cat sat on the mat", "the bat sat on mat today")
    assert (e.ref_words, e.word_errors) == (6, 3) and e.wer == pytest.approx(0.5)
    assert e.ref_chars == len("the cat sat on the mat") and e.cer is not None and 0 < e.cer < 1
    assert transcript_errors("a b", "a b").wer == 0
    assert transcript_errors("", "x").wer is None
