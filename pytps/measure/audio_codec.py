"""The seconds of compressed text-to-speech audio (mp3, opus, aac, flac), read by read, from a
maintained decoder: PyAV (FFmpeg's demuxers and decoders; `pip install 'pytps[voice]'`).

The native transport stamps each read and keeps the body's bytes (the core's `speech-coded`
dialect); after the response, off the stamp path, the reads are fed to FFmpeg's demuxer in their
order and sizes, and each decoded frame's samples are counted for the read that was the last one
handed over when the frame came out. A read's seconds are then what a player built on FFmpeg
could have played once that read had arrived, and the first read with any is the first playable
audio. The demuxer may ask for more bytes than the next frame needs (it checks the frames' sync
when it opens an mp3, an Ogg page must be whole, FLAC's parser reads ahead several frame
headers): the figures include that wait, as such a player would. Decoding after the response
gives the same attribution as decoding live: FFmpeg's output depends only on the bytes given so
far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytps.errors import ConfigError

__all__ = ["CODED_FORMATS", "DecodedReads", "decode_reads", "require_decoder"]

#: OpenAI's compressed response_format values, and the FFmpeg demuxer of each one's stream
#: (opus comes in Ogg; aac as ADTS frames).
CODED_FORMATS = ("mp3", "opus", "aac", "flac")
_DEMUXERS = {"mp3": "mp3", "opus": "ogg", "aac": "aac", "flac": "flac"}


def require_decoder(fmt: str) -> None:
    """Raises ConfigError in one line when PyAV, the decoder of `fmt`, is not installed."""
    try:
        import av  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"--audio-format {fmt} needs a decoder to turn its bytes into seconds: "
            "pip install 'pytps[voice]' (PyAV); without it pytps times pcm and wav"
        ) from None


@dataclass(frozen=True)
class DecodedReads:
    """The decoder's account of a body: the audio seconds that each read made playable, the
    decoded sample rate, and why decoding stopped early (None: the whole body decoded)."""

    seconds: tuple[float, ...]
    sample_rate: int | None
    error: str | None = None


class _Reads:
    """A file object over the reads, in order: read(n) returns at most the rest of the current
    read and moves to the next only when it is used up, so `current` is the last read FFmpeg was
    given (non-seekable: no seek method, so the demuxer never looks at the end of the body)."""

    def __init__(self, body: bytes, sizes: Sequence[int]) -> None:
        self._view = memoryview(body)
        self._ends: list[int] = []
        end = 0
        for n in sizes:
            end += int(n)
            self._ends.append(end)
        self.current = -1
        self._pos = 0

    def read(self, n: int) -> bytes:
        if self.current < 0 or self._pos >= self._ends[self.current]:
            if self.current + 1 >= len(self._ends):
                return b""
            self.current += 1
        end = min(self._ends[self.current], self._pos + n)
        out = bytes(self._view[self._pos : end])
        self._pos = end
        return out


def decode_reads(fmt: str, body: bytes, sizes: Sequence[int]) -> DecodedReads:
    """The seconds of audio each read made playable (len(sizes) values; sizes: the reads' bytes,
    in order, summing to len(body)). A body FFmpeg cannot read keeps the seconds decoded before
    the failure and says why in `error`."""
    import av

    if fmt not in _DEMUXERS:
        raise ConfigError(f"no decoder for audio format {fmt!r}: pytps decodes {', '.join(CODED_FORMATS)}")
    if sum(int(n) for n in sizes) != len(body):
        raise ValueError("the reads' sizes must add up to the body's length")
    if len(sizes) == 0:
        return DecodedReads((), None, "no audio bytes")
    samples = [0.0] * len(sizes)
    rate: int | None = None
    reads = _Reads(body, sizes)
    try:
        # probesize 32: the stream's parameters from its first packets, not from a long read-ahead.
        with av.open(reads, "r", format=_DEMUXERS[fmt], options={"probesize": "32"}) as container:
            stream = container.streams.audio[0]
            for packet in container.demux(stream):
                for frame in packet.decode():
                    rate = int(frame.sample_rate)
                    samples[max(reads.current, 0)] += frame.samples / rate
    except (av.error.FFmpegError, IndexError) as e:
        what = "no audio stream" if isinstance(e, IndexError) else (e.strerror or str(e))
        return DecodedReads(tuple(samples), rate, f"the {fmt} audio could not be decoded: {what}")
    return DecodedReads(tuple(samples), rate)
