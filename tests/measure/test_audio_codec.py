"""Compressed speech's seconds, read by read, from PyAV's decoder (pytps.measure.audio_codec), on
clips PyAV encodes (pytps.workload.coded_speech): the total is the encoded signal's duration
within one codec frame whatever the split into reads, and no read is credited with audio that the
bytes up to it could not give."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("av")

from pytps.measure.audio_codec import CODED_FORMATS, decode_reads  # noqa: E402
from pytps.workload.coded_speech import encoded_speech  # noqa: E402

# One codec frame in seconds at the clips' 24 kHz: MPEG-2 layer III 576 samples, Opus 20 ms,
# FLAC exact (its stream info states the length). ADTS carries no encoder delay: the AAC decoder
# gives the encoder's 1024 priming samples and pads the last frame, so up to two frames more.
TOLERANCE_S = {"mp3": 576 / 24000, "opus": 0.020, "aac": 2 * 1024 / 24000, "flac": 1e-9}


def _sizes(total: int, rng: np.random.Generator, mean: int) -> list[int]:
    sizes: list[int] = []
    while sum(sizes) < total:
        sizes.append(min(int(rng.integers(1, 2 * mean)), total - sum(sizes)))
    return sizes


@pytest.mark.parametrize("fmt", CODED_FORMATS)
def test_seconds_equal_the_encoded_duration_whatever_the_split(fmt: str) -> None:
    clip = encoded_speech(fmt, 1.5)
    assert clip.seconds == 1.5 and clip.format == fmt
    rng = np.random.default_rng(7)
    splits = [[len(clip.data)], [64] * (len(clip.data) // 64) + [len(clip.data) % 64]]
    splits += [_sizes(len(clip.data), rng, mean) for mean in (37, 300, 2000)]
    totals = []
    for sizes in splits:
        sizes = [n for n in sizes if n]
        d = decode_reads(fmt, clip.data, sizes)
        assert d.error is None and len(d.seconds) == len(sizes)
        assert sum(d.seconds) == pytest.approx(clip.seconds, abs=TOLERANCE_S[fmt])
        totals.append(sum(d.seconds))
    assert max(totals) - min(totals) < 1e-9  # the split moves audio between reads, never adds any


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_no_read_is_credited_with_audio_its_bytes_could_not_give(fmt: str) -> None:
    # Causality: the seconds credited to reads 0..k are at most what the bytes up to read k give
    # when they are the whole body (the end of the body lets the decoder flush its last frame).
    clip = encoded_speech(fmt, 1.0)
    sizes = [n for n in [300] * (len(clip.data) // 300) + [len(clip.data) % 300] if n]
    d = decode_reads(fmt, clip.data, sizes)
    credited = np.cumsum(d.seconds)
    ends = np.cumsum(sizes)
    first = int(np.flatnonzero(np.asarray(d.seconds) > 0)[0])
    for k in range(first, len(sizes), 3):
        prefix = clip.data[: int(ends[k])]
        whole = decode_reads(fmt, prefix, [len(prefix)])
        assert credited[k] <= sum(whole.seconds) + 1e-9, k
    # (The converse does not hold: the demuxer may want bytes past a whole frame before it hands
    # the frame over, as when it checks an mp3's frame sync at the start; docs/voice.md.)


def test_a_body_the_decoder_cannot_read_is_an_error_not_an_exception() -> None:
    d = decode_reads("mp3", b"<html>not audio</html>" * 20, [220, 220])
    assert d.error is not None and d.error.startswith("the mp3 audio could not be decoded") and "\n" not in d.error
    assert len(d.seconds) == 2 and sum(d.seconds) == 0
    with pytest.raises(ValueError, match="add up"):
        decode_reads("mp3", b"abc", [2])
    assert decode_reads("opus", b"", []).error == "no audio bytes"


def test_a_body_cut_short_keeps_the_seconds_it_carried() -> None:
    clip = encoded_speech("opus", 1.0)
    half = clip.data[: len(clip.data) // 2]
    d = decode_reads("opus", half, [len(half)])
    assert 0.3 < sum(d.seconds) < 0.7
