"""The emulator's audio routes: their refusals (each a 400 in OpenAI's shape naming what was
wrong), the truth of a speech stream's writes, and a transcription's planted errors."""

from __future__ import annotations

import http.client
import json

import numpy as np
import pytest

import pytps
from pytps.workload.speech_inputs import SpeechItem, mono_wav, multipart_body


def _post(emu: pytps.Emulator, path: str, body: bytes, ctype: str = "application/json") -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
    c.request("POST", path, body, {"Content-Type": ctype})
    r = c.getresponse()
    return r.status, r.read()


def _wav(seconds: float, rate: int = 16000) -> bytes:
    return mono_wav(b"\x01\x00" * int(seconds * rate), rate)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"model": "m"}, "'input' is required"),
        ({"input": "hi", "response_format": "mp3"}, "pcm and wav"),
        ({"input": "hi", "stream_format": "chunks"}, "stream_format"),
        ({"input": "hi", "response_format": "wav", "stream_format": "sse"}, "use response_format 'pcm'"),
    ],
)
def test_speech_refusals(body: dict[str, str], says: str) -> None:
    with pytps.Emulator() as emu:
        status, out = _post(emu, "/v1/audio/speech", json.dumps(body).encode())
    assert status == 400 and says in json.loads(out)["error"]["message"]


def test_transcription_refusals() -> None:
    with pytps.Emulator() as emu:
        status, out = _post(emu, "/v1/audio/transcriptions", b"{}")
        assert status == 400 and "multipart" in json.loads(out)["error"]["message"]
        body, ctype = multipart_body({"model": "m"}, SpeechItem(b"ID3 not a wav", None))
        status, out = _post(emu, "/v1/audio/transcriptions", body, ctype)
        assert status == 400 and "WAV" in json.loads(out)["error"]["message"]
        c = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
        c.request("GET", "/v1/audio/speech")
        assert c.getresponse().status == 405


def test_speech_truth_is_bytes_per_write_at_the_rtf() -> None:
    with pytps.Emulator(ttft_ms=5, speech_rtf=0.5, speech_chunk_ms=20, speech_words_per_s=10) as emu:
        status, out = _post(emu, "/v1/audio/speech", json.dumps({"input": "one two three four five"}).encode())
        (t,) = emu.wait_truth(1)
    assert status == 200 and len(out) == 0.5 * 24000 * 2
    assert t["audio_bytes_per_s"] == 48000 and int(t["tokens"].sum()) == len(out)
    assert list(t["tokens"]) == [960] * 25  # 20 ms of 24 kHz s16 each
    gaps = [b - a for a, b in zip(t["scheduled_ns"], t["scheduled_ns"][1:], strict=False)]
    assert all(g == 10_000_000 for g in gaps)  # 20 ms of audio x RTF 0.5


def test_speech_truth_records_each_writes_audio_seconds() -> None:
    with pytps.Emulator(ttft_ms=5, speech_chunk_ms=20, speech_words_per_s=10) as emu:
        _post(emu, "/v1/audio/speech", json.dumps({"input": "one two three four five"}).encode())
        (t,) = emu.wait_truth(1)
    assert list(t["write_audio_s"]) == pytest.approx([0.02] * 25, abs=1e-12)


def test_speech_streams_a_compressed_clip_whole_at_the_rtf() -> None:
    # A stand-in clip: the emulator never decodes it, it streams its bytes at their average rate.
    clip = bytes(range(256)) * 40  # 10240 bytes as 2 s of audio: 5120 B/s, 102 or 103 B per 20 ms
    with pytps.Emulator(ttft_ms=5, speech_rtf=0.5, speech_chunk_ms=20, speech_clips={"mp3": (clip, 2.0)}) as emu:
        c = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
        c.request("POST", "/v1/audio/speech", json.dumps({"input": "hi", "response_format": "mp3"}).encode())
        r = c.getresponse()
        out = r.read()
        (t,) = emu.wait_truth(1)
        # Another format still gets the refusal naming what the emulator speaks.
        status, err = _post(emu, "/v1/audio/speech", json.dumps({"input": "hi", "response_format": "opus"}).encode())
    assert r.status == 200 and r.getheader("content-type") == "audio/mpeg" and out == clip
    assert int(t["tokens"].sum()) == len(clip) and set(t["tokens"][:-1]) == {102}
    assert float(t["write_audio_s"].sum()) == pytest.approx(2.0, abs=1e-9)
    assert list(t["write_audio_s"]) == pytest.approx(list(t["tokens"] / 5120), abs=1e-12)
    gaps = np.diff(t["scheduled_ns"])
    assert list(gaps) == pytest.approx(list(t["write_audio_s"][1:] * 0.5e9), abs=1)
    assert status == 400 and "speech_clips" in json.loads(err)["error"]["message"]


@pytest.mark.parametrize("clips", [{"mp3": (b"", 1.0)}, {"mp3": (b"x", 0.0)}, {"wav": (b"x", 1.0)}])
def test_speech_clips_are_checked(clips: dict[str, tuple[bytes, float]]) -> None:
    with pytest.raises(ValueError, match="speech_clips"):
        pytps.Emulator(speech_clips=clips)


def test_transcription_plants_round_n_times_rate_errors() -> None:
    audio = _wav(2.0)
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    with pytps.Emulator(stt_word_error_rate=0.3, transcripts=[(audio, text)]) as emu:
        body, ctype = multipart_body({"model": "m"}, SpeechItem(audio, text))
        status, out = _post(emu, "/v1/audio/transcriptions", body, ctype)
        (t,) = emu.wait_truth(1)
    got = json.loads(out)["text"].split()
    assert status == 200 and len(got) == 10
    assert sum(a != b for a, b in zip(got, text.split(), strict=True)) == 3 == t["planted_errors"]
    assert t["input_audio_s"] == pytest.approx(2.0) and t["transcript"] == " ".join(got)
