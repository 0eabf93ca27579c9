"""Speech in, text out, against a real llama.cpp `llama-server`: the tiny text model with a tiny
random audio projector made in the test (`--mmproj`, tiny_audio_projector.py), asked through
`--api openai-transcriptions --stt-request chat` (the audio as an OpenAI `input_audio` part of a
chat message). Judged by the server's own counts: every request answered, its prompt holding
the audio's embeddings, its output tokens pytps's. Tier `real_server`
(.ci/steps/45-llama-server.sh); docs/real-servers.md and docs/voice.md.

The speech is espeak-ng's when it is installed (CI installs it), else a generated tone: the
random projector hears both alike, and the figures are the same kind.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytps.measure.records import RequestRecord
from pytps.runner.voice import VoiceSettings, run_voice_sync
from pytps.workload.speech_inputs import SpeechItem, espeak_items, mono_wav, spoken_texts

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_llama_server import build
from conftest import serve
from test_llama_server_bodies import prompt_tokens_total
from tiny_audio_projector import EMBEDDINGS_PER_WINDOW, WINDOW_S, make_audio_projector
from tiny_model import make_model

pytestmark = pytest.mark.real_server

REQUESTS = 4
CONCURRENCY = 2
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def speech_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server with the tiny model and the tiny audio projector (--mmproj)."""
    binary, vocab = build()
    work = tmp_path_factory.mktemp("llama-speech")
    model = make_model(vocab, work / "tiny.gguf")
    mmproj = make_audio_projector(work / "tiny-audio-mmproj.gguf")
    yield from serve(binary, model, work, "--mmproj", str(mmproj))


def _tone(seconds: float, hz: float, rate: int = 16000) -> bytes:
    n = int(seconds * rate)
    samples = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * i / rate))) for i in range(n))
    return mono_wav(samples, rate)


def speech_items(n: int) -> tuple[SpeechItem, ...]:
    if shutil.which("espeak-ng"):
        return tuple(espeak_items(spoken_texts(n, seed=0, words=8)))
    return tuple(SpeechItem(_tone(2.0 + 0.25 * i, 220.0 + 40 * i), None, f"tone-{i}.wav") for i in range(n))


def test_speech_in_chat_every_request_answered_with_its_audio_heard(speech_server: str) -> None:
    items = speech_items(REQUESTS)
    before = prompt_tokens_total(speech_server)
    t0 = time.monotonic()
    result = run_voice_sync(
        VoiceSettings(
            base_url=speech_server,
            api="openai-transcriptions",
            model="tiny",
            requests=REQUESTS,
            concurrency=CONCURRENCY,
            items=items,
            stt_request="chat",
            max_tokens=MAX_TOKENS,
        )
    )
    wall = time.monotonic() - t0
    s = result.summary
    f = s["figures"]
    print(f"\nspeech in, chat out: {REQUESTS} requests at c={CONCURRENCY}, {wall:.1f} s; "
          f"audio {f['input_audio_s']['mean']:.2f} s mean, first text p50 {f['first_text_s']['p50'] * 1e3:.0f} ms, "
          f"final p50 {f['final_s']['p50'] * 1e3:.0f} ms, RTFx p50 {f['rtfx']['p50']:.2f}")  # fmt: skip
    assert s["ok"] == REQUESTS and s["errors"] == 0, s
    assert len(result.records) == REQUESTS
    for row, rec in zip(result.rows, result.records, strict=True):
        item = items[rec.index % len(items)]
        assert rec.ok and rec.error is None, row
        # pytps's own figures: the audio sent, text before the end, RTFx from them.
        assert row["input_audio_s"] == pytest.approx(item.seconds)
        assert 0 < row["first_text_s"] <= row["final_s"], row
        assert row["rtfx"] == pytest.approx(row["input_audio_s"] / row["final_s"])
        # The answer: one streamed event per token (the tiny model's chunks), as the server counts.
        assert len(rec.output_tokens) == rec.usage["completion_tokens"] == MAX_TOKENS, row
        assert row["text"].strip(), row
        # The server heard the audio: the prompt holds one window's embeddings per 30 s.
        windows = math.ceil(item.seconds / WINDOW_S)
        assert rec.usage["prompt_tokens"] > windows * EMBEDDINGS_PER_WINDOW, rec.usage
    # Every prompt token the server processed, from its own /metrics, is one a request reported
    # (cached ones aside: prompt_tokens counts them, /metrics does not).
    delta = prompt_tokens_total(speech_server) - before
    processed = sum(int(json_timings(rec)["prompt_n"]) for rec in result.records)
    print(f"llamacpp:prompt_tokens_total delta {delta:g}, the requests' timings.prompt_n {processed}")
    assert delta == processed


def json_timings(rec: RequestRecord) -> dict[str, float]:
    """The llama.cpp `timings` object the record kept (its server timings' JSON text)."""
    timings = rec.server_timings
    assert timings is not None, "llama-server sent no timings"
    _source, text = timings
    obj = json.loads(text)
    assert isinstance(obj, dict)
    return obj


def test_server_without_the_projector_fails_each_request_with_its_message(llama_server: str) -> None:
    """Against the plain server (no --mmproj) no request is lost silently: each fails, and its
    error carries the server's own message."""
    result = run_voice_sync(
        VoiceSettings(
            base_url=llama_server,
            api="openai-transcriptions",
            model="tiny",
            requests=2,
            items=speech_items(1),
            stt_request="chat",
            max_tokens=MAX_TOKENS,
        )
    )
    print(f"\nwithout --mmproj: {[(r['error'], r['error_detail']) for r in result.rows]}")
    assert result.summary["ok"] == 0 and len(result.rows) == 2
    for row in result.rows:
        assert not row["ok"] and "audio input is not supported" in (row["error_detail"] or ""), row
