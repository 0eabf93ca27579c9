"""Compressed speech with a known duration, for the emulator's text-to-speech route
(`pytps.Emulator(speech_clips=...)`): a tone encoded once by PyAV (FFmpeg's encoders and muxers;
`pip install 'pytps[voice]'`) in OpenAI's compressed response formats. Its seconds are the PCM's
that went in, so a client's decoded seconds can be checked against them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from pytps.errors import ConfigError

__all__ = ["CodedSpeech", "encoded_speech"]

# (muxer, encoder, its sample rate or None for the input's): Opus runs at 48 kHz; Ogg pages of
# 20 ms, so a page (which a demuxer needs whole) holds a frame, as a streaming server sends them.
_ENCODERS: dict[str, tuple[str, str, int | None]] = {
    "mp3": ("mp3", "libmp3lame", None),
    "opus": ("ogg", "libopus", 48000),
    "aac": ("adts", "aac", None),
    "flac": ("flac", "flac", None),
}


@dataclass(frozen=True)
class CodedSpeech:
    """An encoded clip: its bytes, format and the seconds of audio encoded."""

    format: str
    data: bytes
    seconds: float
    sample_rate: int


def encoded_speech(fmt: str, seconds: float, sample_rate: int = 24000) -> CodedSpeech:
    """`seconds` of a 440 Hz tone (16-bit mono at `sample_rate`), encoded as `fmt`."""
    try:
        import av
    except ImportError:
        raise ConfigError(f"compressed speech ({fmt}) is encoded by PyAV: pip install 'pytps[voice]'") from None
    import numpy as np

    if fmt not in _ENCODERS:
        raise ConfigError(f"no encoder for {fmt!r}: use one of {', '.join(_ENCODERS)}")
    if seconds <= 0:
        raise ConfigError("the clip's seconds must be > 0")
    muxer, codec, codec_rate = _ENCODERS[fmt]
    n = max(1, round(seconds * sample_rate))
    t = np.arange(n) / sample_rate
    pcm = (np.sin(2 * np.pi * 440.0 * t) * 8000).astype(np.int16)
    frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = sample_rate
    buf = io.BytesIO()
    options = {"page_duration": "20000"} if muxer == "ogg" else {}
    with av.open(buf, "w", format=muxer, container_options=options) as out:
        stream = out.add_stream(codec, rate=codec_rate or sample_rate, layout="mono")
        for f in (frame, None):
            for packet in stream.encode(f):
                out.mux(packet)
    return CodedSpeech(fmt, buf.getvalue(), n / sample_rate, sample_rate)
