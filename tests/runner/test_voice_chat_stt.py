"""Speech to text through a chat model (`--stt-request chat`): the request carries the audio as an
OpenAI `input_audio` part of a /v1/chat/completions message, and the answer is read as the
transcript. The body's shape here; against the emulator's chat route, the figures and the
answer's streamed text (its tokens are the truth's). The real server is llama-server with an
audio projector: tests/real_servers/test_llama_server_speech.py."""

from __future__ import annotations

import base64
import json

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.runner.voice import VoiceSettings, run_voice_sync
from pytps.workload.speech_inputs import CHAT_TRANSCRIBE_PROMPT, SpeechItem, chat_audio_body, mono_wav


def _silence(seconds: float, rate: int = 16000) -> bytes:
    return mono_wav(b"\0\0" * int(seconds * rate), rate)


ITEMS = (SpeechItem(_silence(1.0), "one"), SpeechItem(_silence(1.5), "two"))


@pytest.mark.parametrize("stream", [True, False])
def test_the_chat_body_carries_the_wav_as_an_input_audio_part(stream: bool) -> None:
    body = json.loads(chat_audio_body("m", ITEMS[0], max_tokens=7, stream=stream))
    (message,) = body["messages"]
    assert message["role"] == "user"
    text, audio = message["content"]
    assert text == {"type": "text", "text": CHAT_TRANSCRIBE_PROMPT}
    assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
    assert base64.b64decode(audio["input_audio"]["data"]) == ITEMS[0].audio
    assert body["max_tokens"] == 7 and body["stream"] is stream
    assert body.get("stream_options") == ({"include_usage": True} if stream else None)


@pytest.mark.parametrize("stream", [True, False])
def test_chat_stt_against_the_emulator_times_the_answer(stream: bool) -> None:
    with pytps.Emulator(ttft_ms=5, itl_us=1000) as emu:
        s = VoiceSettings(emu.base_url, "openai-transcriptions", "m", requests=4, concurrency=2, items=ITEMS,
                          stt_request="chat", max_tokens=6, stream=stream)  # fmt: skip
        result = run_voice_sync(s)
        truth = emu.wait_truth(4)
    assert result.summary["ok"] == 4 and result.summary["errors"] == 0
    assert {t["path"] for t in truth} == {"/v1/chat/completions"}
    assert all(t["output_tokens"] == 6 for t in truth)
    assert result.to_json()["metadata"]["stt_request"] == "chat"
    for row, rec in zip(result.rows, result.records, strict=True):
        assert row["input_audio_s"] == ITEMS[rec.index % 2].seconds
        assert row["text"].strip() and row["wer"] is not None
        assert row["final_s"] >= 0.005 and row["rtfx"] == pytest.approx(row["input_audio_s"] / row["final_s"])
        if stream:
            assert len(rec.output_tokens) == 6  # one event per token, the emulator's stream
            assert 0.005 <= row["first_text_s"] <= row["final_s"]
        else:
            assert row["first_text_s"] is None


def test_chat_stt_refuses_what_it_cannot_send_in_one_line() -> None:
    def settings(**kw: object) -> VoiceSettings:
        base = {"base_url": "http://127.0.0.1:9", "model": "m", "items": ITEMS, "texts": ("hi",)}
        return VoiceSettings(**{**base, **kw})  # type: ignore[arg-type]

    with pytest.raises(ConfigError, match="--stt-request must be one of transcriptions, chat"):
        settings(api="openai-transcriptions", stt_request="multipart").check()
    with pytest.raises(ConfigError, match="--stt-request chat is speech to text's"):
        settings(api="openai-speech", stt_request="chat").check()
    with pytest.raises(ConfigError, match="--output-tokens must be one integer >= 1"):
        settings(api="openai-transcriptions", stt_request="chat", max_tokens=0).check()


def test_output_tokens_is_one_integer_for_chat_stt() -> None:
    from pytps.app.voice import _max_tokens

    assert _max_tokens(None) == 128 and _max_tokens("16") == 16 and _max_tokens(16) == 16
    with pytest.raises(ConfigError, match="--output-tokens '16-32': speech to text through chat"):
        _max_tokens("16-32")
