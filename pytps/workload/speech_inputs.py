"""What voice requests carry: texts to speak, audio to transcribe (a dataset of WAV files with
their transcripts, or speech made from text by espeak-ng on this machine), and the request bodies
of OpenAI's /v1/audio/speech (JSON) and /v1/audio/transcriptions (multipart/form-data), or of a
chat request carrying the audio as an `input_audio` part."""

from __future__ import annotations

import base64
import io
import json
import random
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError
from pytps.workload.words import WORDS

__all__ = [
    "CHAT_TRANSCRIBE_PROMPT",
    "ESPEAK_MISSING",
    "SpeechItem",
    "chat_audio_body",
    "espeak_items",
    "espeak_wav",
    "load_audio_dataset",
    "multipart_body",
    "speakable_pieces",
    "speech_body",
    "spoken_texts",
    "wav_seconds",
]

ESPEAK_MISSING = (
    "espeak-ng is not installed, and speech to text needs audio: install it (apt-get install espeak-ng) "
    "or give --audio-dataset FILE.jsonl"
)
#: The text sent beside the audio when speech to text goes through a chat model (--stt-request chat).
CHAT_TRANSCRIBE_PROMPT = "Transcribe this audio."
#: The multipart boundary of every upload: fixed, so a request's bytes are the same run to run.
BOUNDARY = "pytps-voice-7d1c0f3a9b"


@dataclass(frozen=True)
class SpeechItem:
    """One audio file to transcribe, with its reference transcript (None: not graded)."""

    audio: bytes
    reference: str | None
    name: str = "audio.wav"

    @property
    def seconds(self) -> float:
        return wav_seconds(self.audio)


def spoken_texts(n: int, seed: int, words: int = 12) -> list[str]:
    """n seeded sentences of `words` common words each, ending in a full stop."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ws = [rng.choice(WORDS) for _ in range(words)]
        out.append(" ".join(ws).capitalize() + ".")
    return out


def mono_wav(frames: bytes, rate: int) -> bytes:
    """A mono 16-bit PCM WAV file of the given little-endian sample bytes at rate Hz."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return buf.getvalue()


def wav_seconds(data: bytes) -> float:
    """Seconds of audio in a WAV file (its header's frame count)."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            return int(w.getnframes()) / float(w.getframerate())
    except (wave.Error, EOFError) as exc:
        raise ConfigError(f"not a WAV file pytps can read ({exc}): give 16-bit PCM WAV audio") from None


def espeak_wav(text: str, *, voice: str = "en", words_per_minute: int = 160) -> bytes:
    """Speech of `text` made by espeak-ng, as WAV bytes (22.05 kHz mono 16-bit)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise ConfigError(ESPEAK_MISSING)
    with tempfile.TemporaryDirectory(prefix="pytps-espeak-") as tmp:
        out = Path(tmp) / "speech.wav"
        subprocess.run(
            [exe, "-v", voice, "-s", str(words_per_minute), "-w", str(out), "--", text],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return out.read_bytes()


def espeak_items(texts: list[str], **kwargs: Any) -> list[SpeechItem]:
    """One espeak-ng utterance per text, the text its reference."""
    return [SpeechItem(espeak_wav(t, **kwargs), t, f"utterance-{i}.wav") for i, t in enumerate(texts)]


def load_audio_dataset(path: str | Path) -> list[SpeechItem]:
    """A JSONL file of {"audio": "path.wav", "text": "its transcript"} lines (audio paths relative to
    the file's folder; "text" may be left out: not graded)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--audio-dataset {p}: no such file (a JSONL file of {{audio, text}} lines)")
    items = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            audio = p.parent / str(obj["audio"])
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f'{p}:{n}: each line must be a JSON object with an "audio" path') from None
        if not audio.is_file():
            raise ConfigError(f"{p}:{n}: audio file {audio} not found")
        text = obj.get("text")
        items.append(SpeechItem(audio.read_bytes(), None if text is None else str(text), audio.name))
    if not items:
        raise ConfigError(f"{p}: no audio in the dataset")
    return items


def speech_body(model: str, text: str, *, voice: str, response_format: str, stream_format: str) -> bytes:
    """The JSON body of POST /v1/audio/speech; stream_format "audio" (raw bytes) is the API's default
    and is left out."""
    body: dict[str, Any] = {"model": model, "input": text, "voice": voice, "response_format": response_format}
    if stream_format != "audio":
        body["stream_format"] = stream_format
    return json.dumps(body).encode()


def multipart_body(fields: dict[str, str], item: SpeechItem) -> tuple[bytes, str]:
    """(body, content type) of a multipart/form-data upload: the fields, then the audio as `file`."""
    parts = []
    for name, value in fields.items():
        parts.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{item.name}"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + item.audio
        + b"\r\n"
    )
    parts.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={BOUNDARY}"


def chat_audio_body(model: str, item: SpeechItem, *, max_tokens: int, stream: bool) -> bytes:
    """The JSON body of POST /v1/chat/completions carrying the audio as an OpenAI `input_audio`
    part (base64 WAV) after the text CHAT_TRANSCRIBE_PROMPT: speech to text through an
    audio-input chat model (llama-server with an audio --mmproj, vLLM's audio models). A stream
    asks for the usage chunk, as pytps's chat requests do."""
    audio = {"data": base64.b64encode(item.audio).decode("ascii"), "format": "wav"}
    content = [{"type": "text", "text": CHAT_TRANSCRIBE_PROMPT}, {"type": "input_audio", "input_audio": audio}]
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


def speakable_pieces(text: str, max_words: int = 12) -> tuple[list[str], str]:
    """(pieces ready to speak, the rest) of a reply streaming in: a piece ends at a sentence's end
    (., ! or ? then whitespace) or after max_words words, as voice agents hand text to TTS by
    sentence while a long unpunctuated reply still flushes. The rest waits for more text (or the
    reply's end, when it is spoken whole)."""
    pieces: list[str] = []
    start = 0
    words = 0
    i = 0
    in_word = False
    while i < len(text):
        c = text[i]
        if c.isspace():
            if in_word:
                words += 1
                in_word = False
                ends = text[i - 1] in ".!?"
                if ends or words >= max_words:
                    piece = text[start:i].strip()
                    if piece:
                        pieces.append(piece)
                    start, words = i, 0
        else:
            in_word = True
        i += 1
    return pieces, text[start:]
