"""The voice figures (docs/metrics.md, "Voice"), from records only: text to speech's time to first
audio, audio seconds, real-time factor and the simulated player's stalls; speech to text's time to
first text, time to the final transcript and RTFx; word and character errors (jiwer).

Times are the transport's stamps (CLOCK_MONOTONIC ns). For text to speech each output event of a
record is one read's audio: its `output_chars` are audio BYTES (the core's audio dialects), turned
into seconds by the stream's format (a WAV header's, else the request's PCM format), or, for a
compressed format, by the decoder (pytps.measure.audio_codec: the seconds each read made playable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pytps.measure.records import RequestRecord

if TYPE_CHECKING:
    import numpy as np

    from pytps.measure.audio_codec import DecodedReads

__all__ = [
    "DEFAULT_PLAYBACK_BUFFER_MS",
    "PcmFormat",
    "PlaybackResult",
    "SpeechFigures",
    "TranscriptErrors",
    "TranscriptionFigures",
    "simulate_playback",
    "speech_figures",
    "transcript_errors",
    "transcription_figures",
]

#: The simulated player's jitter buffer: how long it holds the first audio before it plays.
DEFAULT_PLAYBACK_BUFFER_MS = 200.0


@dataclass(frozen=True)
class PcmFormat:
    """Linear PCM: samples per second, channels, bytes per sample (OpenAI's pcm: 24 kHz mono s16le)."""

    sample_rate: int = 24000
    channels: int = 1
    sample_bytes: int = 2

    @property
    def bytes_per_s(self) -> int:
        return self.sample_rate * self.channels * self.sample_bytes

    @property
    def frame_bytes(self) -> int:
        """One sample of every channel: the least audio a player can play."""
        return self.channels * self.sample_bytes

    @classmethod
    def of_wav(cls, fmt: dict[str, int] | None, default: PcmFormat) -> PcmFormat:
        """The format a WAV header stated (the recorder's audio_format), else `default`."""
        if not fmt or fmt.get("sample_rate", 0) <= 0 or fmt.get("channels", 0) <= 0:
            return default
        return cls(int(fmt["sample_rate"]), int(fmt["channels"]), max(1, int(fmt["bits_per_sample"]) // 8))


@dataclass(frozen=True)
class PlaybackResult:
    """What the simulated player heard: when it started, and each stall (when, how long)."""

    start_ns: int
    stall_at_ns: tuple[int, ...]
    stall_ns: tuple[int, ...]

    @property
    def stalls(self) -> int:
        return len(self.stall_ns)

    @property
    def stalled_s(self) -> float:
        return sum(self.stall_ns) / 1e9


def simulate_playback(
    times_ns: Sequence[int] | np.ndarray,
    audio_s: Sequence[float] | np.ndarray,
    buffer_ms: float = DEFAULT_PLAYBACK_BUFFER_MS,
) -> PlaybackResult:
    """A player behind a fixed jitter buffer: it starts `buffer_ms` after the first audio arrived
    and plays continuously; when the audio it has runs out before the next arrives, it stalls
    until that arrival and plays on at once (no re-buffering: the stall is exactly the time the
    stream fell behind). times_ns: arrival of each piece of audio, in order; audio_s: its seconds.
    A piece of no seconds is no audio (a compressed stream's reads before the decoder could give
    samples): the buffer starts with the first audio the player can play.
    """
    pieces = [(int(t), float(s)) for t, s in zip(times_ns, audio_s, strict=True) if s > 0]
    if not pieces:
        return PlaybackResult(0, (), ())
    buffer_ns = round(buffer_ms * 1e6)
    start = pieces[0][0] + buffer_ns
    play_end = float(start)  # when the audio received so far has been played out
    at: list[int] = []
    dur: list[int] = []
    for t, s in pieces:
        if t > play_end:  # ran dry before this arrival: a stall until it
            at.append(round(play_end))
            dur.append(round(t - play_end))
            play_end = float(t)
        play_end += s * 1e9
    return PlaybackResult(start, tuple(at), tuple(dur))


@dataclass(frozen=True)
class SpeechFigures:
    """One text-to-speech request's figures (seconds unless named otherwise)."""

    ttfb_s: float | None  # request sent -> first byte of the body (a WAV header included)
    ttfa_s: float | None  # request sent -> first audio byte
    # request sent -> the read completing the first whole audio frame (PCM: one sample of every
    # channel; compressed: the read after which the decoder first gave samples)
    first_playable_s: float | None
    audio_s: float  # audio received
    audio_bytes: int
    generation_s: float | None  # request sent -> last audio byte
    rtf: float | None  # generation_s / audio_s
    inverse_rtf: float | None  # audio_s / generation_s
    playback: PlaybackResult
    chunks: int

    def row(self) -> dict[str, Any]:
        """The request's figures for its row (pytps.runner.voice.request_row): each field under its
        own name, in order, then the simulated player's stalls and the chunk count."""
        figures = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("playback", "chunks")}
        return {
            **figures,
            "stalls": self.playback.stalls,
            "stalled_s": self.playback.stalled_s,
            "stall_ms": [d / 1e6 for d in self.playback.stall_ns],
            "audio_chunks": self.chunks,
        }


def speech_figures(
    rec: RequestRecord,
    pcm: PcmFormat,
    buffer_ms: float = DEFAULT_PLAYBACK_BUFFER_MS,
    decoded: DecodedReads | None = None,
) -> SpeechFigures:
    """The figures of one text-to-speech record (its output events are reads of audio bytes).
    decoded: a compressed stream's seconds per read, from the decoder; None: PCM or WAV, whose
    seconds are its bytes'."""
    import numpy as np  # here, not at import: the CLI's flags read this module's default

    times = rec.output_times_ns
    nbytes = np.asarray(rec.output_chars, dtype=np.int64)
    total = int(nbytes.sum())
    send = rec.t_send_ns

    def since(t: int | None) -> float | None:
        return None if t is None else (t - send) / 1e9

    first_playable = None
    if decoded is not None:
        seconds = np.asarray(decoded.seconds, dtype=np.float64)
        playable = np.flatnonzero(seconds > 0)
        if len(playable):
            first_playable = since(int(times[int(playable[0])]))
        audio_s = float(seconds.sum())
    else:
        fmt = PcmFormat.of_wav(rec.audio_format, pcm)
        if total >= fmt.frame_bytes:
            idx = int(np.searchsorted(np.cumsum(nbytes), fmt.frame_bytes))
            first_playable = since(int(times[idx]))
        audio_s = total / fmt.bytes_per_s
        seconds = nbytes / fmt.bytes_per_s
    gen = since(int(times[-1])) if len(times) else None
    first_body = rec.first_body_ns if rec.first_body_ns is not None else (int(times[0]) if len(times) else None)
    return SpeechFigures(
        ttfb_s=since(first_body),
        ttfa_s=since(int(times[0])) if len(times) else None,
        first_playable_s=first_playable,
        audio_s=audio_s,
        audio_bytes=total,
        generation_s=gen,
        rtf=gen / audio_s if gen is not None and audio_s > 0 else None,
        inverse_rtf=audio_s / gen if gen and audio_s > 0 else None,
        playback=simulate_playback(times, seconds, buffer_ms),
        chunks=len(times),
    )


@dataclass(frozen=True)
class TranscriptErrors:
    """Word and character edits of a hypothesis against its reference (jiwer's alignment)."""

    ref_words: int
    word_errors: int  # substitutions + deletions + insertions
    ref_chars: int
    char_errors: int

    @property
    def wer(self) -> float | None:
        return self.word_errors / self.ref_words if self.ref_words else None

    @property
    def cer(self) -> float | None:
        return self.char_errors / self.ref_chars if self.ref_chars else None


def transcript_errors(reference: str, hypothesis: str) -> TranscriptErrors:
    """WER and CER counts of one transcript, on jiwer's default normalisation (whitespace only:
    case and punctuation count, as in jiwer and the Open ASR leaderboard's raw scores)."""
    try:
        import jiwer
    except ImportError:  # pragma: no cover - the message is the point
        from pytps.errors import ConfigError

        raise ConfigError("WER and CER need jiwer: pip install 'pytps[voice]'") from None
    ref = " ".join(reference.split())
    hyp = " ".join(hypothesis.split())
    if not ref:
        return TranscriptErrors(0, len(hyp.split()), 0, len(hyp))
    w = jiwer.process_words(ref, hyp if hyp else "")
    c = jiwer.process_characters(ref, hyp if hyp else "")
    return TranscriptErrors(
        ref_words=w.hits + w.substitutions + w.deletions,
        word_errors=w.substitutions + w.deletions + w.insertions,
        ref_chars=c.hits + c.substitutions + c.deletions,
        char_errors=c.substitutions + c.deletions + c.insertions,
    )


@dataclass(frozen=True)
class TranscriptionFigures:
    """One speech-to-text request's figures."""

    input_audio_s: float
    first_text_s: float | None  # request sent (its last byte) -> first text (streamed only)
    final_s: float | None  # request sent -> the final transcript (terminal event, or the whole body)
    rtfx: float | None  # input_audio_s / final_s
    text: str
    errors: TranscriptErrors | None

    def row(self) -> dict[str, Any]:
        e = self.errors
        return {
            "input_audio_s": self.input_audio_s,
            "first_text_s": self.first_text_s,
            "final_s": self.final_s,
            "rtfx": self.rtfx,
            "ref_words": e.ref_words if e else None,
            "word_errors": e.word_errors if e else None,
            "ref_chars": e.ref_chars if e else None,
            "char_errors": e.char_errors if e else None,
            "wer": e.wer if e else None,
        }


def transcription_figures(
    rec: RequestRecord, text: str, input_audio_s: float, reference: str | None
) -> TranscriptionFigures:
    """text: the transcript (the stream's, or the whole body's `text`)."""
    send = rec.t_send_ns
    first = (rec.first_output_ns - send) / 1e9 if rec.stream and rec.first_output_ns is not None else None
    end = rec.end_ns if rec.end_ns is not None else rec.t_done_ns
    final = (end - send) / 1e9 if end is not None else None
    return TranscriptionFigures(
        input_audio_s=input_audio_s,
        first_text_s=first,
        final_s=final,
        rtfx=input_audio_s / final if final else None,
        text=text,
        errors=transcript_errors(reference, text) if reference is not None else None,
    )


def realtime_figures(
    speech_start_ns: int,
    speech_end_ns: int,
    delta_ns: Sequence[int],
    final_ns: int | None,
    frame_due_ns: Sequence[int],
    frame_sent_ns: Sequence[int],
) -> dict[str, Any]:
    """One realtime session's figures: start of speech → first delta, end of speech → the final
    transcript (the figure a voice agent waits on), and how late the audio frames left."""
    late = sorted((s - d) / 1e9 for s, d in zip(frame_sent_ns, frame_due_ns, strict=True))

    def pct(q: float) -> float | None:
        return late[min(len(late) - 1, int(q * len(late)))] if late else None

    return {
        "first_delta_s": (delta_ns[0] - speech_start_ns) / 1e9 if delta_ns else None,
        "final_s": (final_ns - speech_end_ns) / 1e9 if final_ns is not None else None,
        "deltas": len(delta_ns),
        "frames": len(late),
        "frame_late_p50_s": pct(0.5),
        "frame_late_p99_s": pct(0.99),
        "frame_late_max_s": late[-1] if late else None,
    }
