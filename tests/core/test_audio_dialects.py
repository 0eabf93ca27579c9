"""The audio dialects of the native recorder: raw PCM and WAV bodies, OpenAI's speech SSE, and
streamed transcription in OpenAI's and vLLM's shapes, each fed split at every byte position."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from pytps._native import _core


def _wav_header(rate: int = 24000, extra_chunk: bool = True) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt
    if extra_chunk:  # a LIST chunk of odd size, padded: not audio
        chunks += b"LIST" + struct.pack("<I", 3) + b"abc\x00"
    return b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + chunks + b"data" + struct.pack("<I", 0xFFFFFFFF)


def _feed_split(dialect: str, body: bytes, at: int) -> object:
    rec = _core.StreamRecorder(dialect)
    rec.feed(body[:at], 10)
    rec.feed(body[at:], 20)
    rec.close(30)
    return rec


def test_pcm_every_read_is_audio() -> None:
    rec = _core.StreamRecorder("speech-pcm")
    for i, n in enumerate((7, 1, 1000)):
        rec.feed(b"\x01" * n, 100 + i)
    rec.close(200)
    assert list(rec.output_chars) == [7, 1, 1000]
    assert list(rec.output_times_ns) == [100, 101, 102]
    assert rec.first_body_ns == 100 and rec.done and rec.error is None and rec.audio_format is None


def test_coded_body_is_kept_whole_and_every_read_counts_at_every_split() -> None:
    # A compressed body (mp3 here: an ID3 tag, then frames): every byte is the decoder's, so each
    # read is one event of all its bytes, and the body is kept for Python's decoder.
    body = b"ID3\x04\x00\x00\x00\x00\x00\x05hello" + bytes(range(256)) * 2
    for at in range(len(body) + 1):
        rec = _feed_split("speech-coded", body, at)
        assert rec.body == body, at
        assert list(rec.output_chars) == [n for n in (at, len(body) - at) if n], at
        assert rec.first_output_ns == (10 if at > 0 else 20) == rec.first_body_ns
        assert rec.done and rec.error is None and rec.audio_format is None


def test_raw_pcm_and_wav_bodies_are_not_kept() -> None:
    # Their seconds are their bytes': the recorder keeps no copy of them.
    for dialect, body in (("speech-pcm", b"\x01" * 100), ("speech-wav", _wav_header() + b"\x01" * 100)):
        rec = _feed_split(dialect, body, 7)
        assert rec.body == b"" and int(rec.output_chars.sum()) == 100


def test_wav_header_split_at_every_byte() -> None:
    audio = bytes(range(256)) * 4
    body = _wav_header() + audio
    header = len(body) - len(audio)
    for at in range(len(body) + 1):
        rec = _feed_split("speech-wav", body, at)
        assert int(rec.output_chars.sum()) == len(audio), at
        # The first read carries audio only when the split is past the header.
        assert rec.first_output_ns == (10 if at > header else 20), at
        assert rec.first_body_ns == (10 if at > 0 else 20)
        assert rec.audio_format == {"sample_rate": 24000, "channels": 1, "bits_per_sample": 16, "format_tag": 1}
        assert rec.done and rec.error is None


def test_wav_that_is_not_wav_is_a_protocol_error() -> None:
    rec = _core.StreamRecorder("speech-wav")
    rec.feed(b"ID3\x04" + b"\x00" * 100, 1)
    rec.close(2)
    assert not rec.done and rec.error is not None and "RIFF" in rec.error["message"]
    assert rec.output_events == 0


def _sse(*events: dict[str, object]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def test_speech_sse_counts_decoded_bytes_at_every_split() -> None:
    chunks = [b"\x00\x01\x02", b"\x03" * 10, b"\x04"]
    body = _sse(
        *[{"type": "speech.audio.delta", "audio": base64.b64encode(c).decode()} for c in chunks],
        {"type": "speech.audio.done", "usage": {"input_tokens": 3, "output_tokens": 9, "total_tokens": 12}},
    )
    for at in range(len(body) + 1):
        rec = _feed_split("speech-sse", body, at)
        assert list(rec.output_chars) == [3, 10, 1], at
        assert rec.done and rec.error is None
        assert rec.usage == {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}


def test_speech_sse_rejects_audio_that_is_not_base64() -> None:
    rec = _core.StreamRecorder("speech-sse")
    rec.feed(_sse({"type": "speech.audio.delta", "audio": "A"}), 1)
    rec.close(2)
    assert rec.error is not None and rec.error["kind"] == "protocol"


OPENAI_SHAPE = _sse(
    {"type": "transcript.text.delta", "delta": "hello"},
    {"type": "transcript.text.delta", "delta": " wörld"},
    {"type": "transcript.text.done", "text": "hello wörld", "usage": {"type": "tokens", "input_tokens": 5, "output_tokens": 2}},
)
VLLM_SHAPE = (
    _sse(
        {"id": "t1", "object": "transcription.chunk", "choices": [{"index": 0, "delta": {"content": "hello"}}]},
        {"id": "t1", "object": "transcription.chunk", "choices": [{"index": 0, "delta": {"content": " wörld"}}]},
        {
            "id": "t1",
            "object": "transcription.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        },
    )
    + b"data: [DONE]\n\n"
)


@pytest.mark.parametrize("body", [OPENAI_SHAPE, VLLM_SHAPE], ids=["openai", "vllm"])
def test_transcription_both_shapes_at_every_split(body: bytes) -> None:
    for at in range(len(body) + 1):
        rec = _feed_split("transcription", body, at)
        assert rec.text == "hello wörld", at
        assert list(rec.output_chars) == [5, 6]
        assert rec.done and rec.error is None
        assert rec.usage["prompt_tokens"] == 5 and rec.usage["completion_tokens"] == 2


def test_transcription_done_alone_carries_the_text() -> None:
    rec = _core.StreamRecorder("transcription")
    rec.feed(_sse({"type": "transcript.text.done", "text": "all at once"}), 7)
    rec.close(8)
    assert rec.text == "all at once" and list(rec.output_times_ns) == [7] and rec.done


def test_transcription_error_event() -> None:
    rec = _core.StreamRecorder("transcription")
    rec.feed(_sse({"type": "error", "error": {"message": "boom"}}), 7)
    rec.close(8)
    assert rec.error is not None and rec.error["kind"] == "in_stream" and "boom" in rec.error["message"]


def test_audio_api_paths() -> None:
    assert _core.AUDIO_API_PATHS == {
        "openai-speech": "/v1/audio/speech",
        "openai-transcriptions": "/v1/audio/transcriptions",
    }
