"""A voice run: text to speech (--api openai-speech) or speech to text (--api
openai-transcriptions) at a fixed concurrency, every request through the native transport (the
C++ engine stamps each read; the core's audio dialects count what it carried), each request's
figures from pytps.measure.voice, and the run's summary (pytps.measure.voice_summary).

Requests are made before the run starts (bodies rendered, audio read or synthesised), so nothing
but the send sits between a request's turn and the wire.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.measure.audio_codec import CODED_FORMATS, decode_reads, require_decoder
from pytps.measure.records import ERROR_PROTOCOL, RequestRecord
from pytps.measure.voice import (
    DEFAULT_PLAYBACK_BUFFER_MS,
    PcmFormat,
    speech_figures,
    transcription_figures,
)
from pytps.measure.voice_summary import summarize_voice
from pytps.transport.base import RequestSpec, Timeouts
from pytps.workload.request_formats import AUDIO_APIS
from pytps.workload.speech_inputs import SpeechItem, chat_audio_body, multipart_body, speech_body

__all__ = ["AUDIO_APIS", "VoiceResult", "VoiceSettings", "run_voice", "run_voice_sync"]

_PATHS: dict[str, str] = dict(_core.AUDIO_API_PATHS)
AUDIO_FORMATS = ("pcm", "wav", *CODED_FORMATS)
STREAM_FORMATS = ("audio", "sse")
#: How speech to text is asked for: OpenAI's multipart upload, or a chat request whose message
#: carries the audio as an `input_audio` part (audio-input chat models: llama-server --mmproj).
STT_REQUESTS = ("transcriptions", "chat")
_CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class VoiceSettings:
    """Everything a voice run needs, checked once (check())."""

    base_url: str
    api: str
    model: str
    requests: int = 10
    concurrency: int = 1
    warmup: int = 0
    # Text to speech: the texts spoken in turn, the audio asked for, and the player's buffer.
    texts: tuple[str, ...] = ()
    audio_format: str = "pcm"
    stream_format: str = "audio"
    voice: str = "alloy"
    pcm: PcmFormat = field(default_factory=PcmFormat)
    playback_buffer_ms: float = DEFAULT_PLAYBACK_BUFFER_MS
    # Speech to text: the files sent in turn, streamed or not, and how (STT_REQUESTS); through a
    # chat model, the answer's max_tokens.
    items: tuple[SpeechItem, ...] = ()
    stream: bool = True
    stt_request: str = "transcriptions"
    max_tokens: int = 128
    headers: dict[str, str] = field(default_factory=dict)
    read_timeout_s: float = 120.0

    def check(self) -> VoiceSettings:
        if self.api not in AUDIO_APIS:
            raise ConfigError(f"unknown audio API {self.api!r}: use one of {', '.join(AUDIO_APIS)}")
        if self.requests < 1 or self.concurrency < 1 or self.warmup < 0:
            raise ConfigError("--requests and --concurrency must be >= 1, --warmup >= 0")
        if self.playback_buffer_ms < 0:
            raise ConfigError("--playback-buffer-ms must be >= 0")
        if self.api == "openai-speech":
            if not self.texts:
                raise ConfigError("text to speech needs texts to speak (--dataset, or the generated sentences)")
            if self.audio_format not in AUDIO_FORMATS:
                raise ConfigError(f"--audio-format {self.audio_format!r}: use one of {', '.join(AUDIO_FORMATS)}")
            if self.audio_format in CODED_FORMATS:
                require_decoder(self.audio_format)
            if self.stream_format not in STREAM_FORMATS:
                raise ConfigError("--speech-stream-format must be 'audio' (raw bytes) or 'sse'")
            if self.stream_format == "sse" and self.audio_format != "pcm":
                raise ConfigError("--speech-stream-format sse carries base64 pcm: use --audio-format pcm")
        elif not self.items:
            raise ConfigError("speech to text needs audio: --audio-dataset FILE.jsonl, or espeak-ng to make it")
        if self.stt_request not in STT_REQUESTS:
            raise ConfigError(f"--stt-request must be one of {', '.join(STT_REQUESTS)}, got {self.stt_request!r}")
        if self.stt_request == "chat" and self.api != "openai-transcriptions":
            raise ConfigError("--stt-request chat is speech to text's: use it with --api openai-transcriptions")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigError(f"--output-tokens must be one integer >= 1 here, got {self.max_tokens!r}")
        return self

    @property
    def via_chat(self) -> bool:
        return self.api == "openai-transcriptions" and self.stt_request == "chat"

    def dialect(self) -> str:
        if self.via_chat:
            return "openai-chat" if self.stream else "json"
        if self.api == "openai-transcriptions":
            return "transcription" if self.stream else "json"
        if self.stream_format == "sse":
            return "speech-sse"
        if self.audio_format in CODED_FORMATS:
            return "speech-coded"  # the body kept for the decoder (pytps.measure.audio_codec)
        return "speech-wav" if self.audio_format == "wav" else "speech-pcm"

    def spec(self, index: int, warmup: bool) -> tuple[RequestSpec, SpeechItem | None]:
        headers = dict(self.headers)
        item: SpeechItem | None = None
        if self.api == "openai-speech":
            text = self.texts[index % len(self.texts)]
            body = speech_body(
                self.model, text, voice=self.voice, response_format=self.audio_format, stream_format=self.stream_format
            )
        elif self.via_chat:
            item = self.items[index % len(self.items)]
            body = chat_audio_body(self.model, item, max_tokens=self.max_tokens, stream=self.stream)
        else:
            item = self.items[index % len(self.items)]
            fields = {"model": self.model, "response_format": "json"}
            if self.stream:
                fields["stream"] = "true"
            body, ctype = multipart_body(fields, item)
            headers["content-type"] = ctype
        spec = RequestSpec(
            index=index,
            path=_CHAT_PATH if self.via_chat else _PATHS[self.api],
            body=body,
            headers=headers,
            dialect=self.dialect(),
            warmup=warmup,
            stream=self.dialect() != "json",
        )
        return spec, item


@dataclass
class VoiceResult:
    """A finished voice run: per-request rows (figures and errors), the summary, the records."""

    settings: VoiceSettings
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    records: list[RequestRecord]
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "metadata": {
                "api": s.api,
                "base_url": s.base_url,
                "model": s.model,
                "concurrency": s.concurrency,
                "requests": s.requests,
                "audio_format": s.audio_format if s.api == "openai-speech" else None,
                "stream_format": s.stream_format if s.api == "openai-speech" else None,
                "stream": s.stream,
                "stt_request": s.stt_request if s.api == "openai-transcriptions" else None,
                "playback_buffer_ms": s.playback_buffer_ms,
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            "summary": self.summary,
            "requests": self.rows,
        }

    def save(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "voice.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        tmp.replace(path)
        return path


def _transcript(rec: RequestRecord) -> str:
    """The transcript: the stream's text, or the whole body's `text` (a chat model's answer:
    choices[0].message.content)."""
    if rec.stream:
        return rec.text
    try:
        obj = json.loads(rec.body or b"{}")
    except ValueError:
        return ""
    if not isinstance(obj, dict):
        return ""
    if "text" not in obj and isinstance(obj.get("choices"), list) and obj["choices"]:
        choice = obj["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        return str(message.get("content") or "") if isinstance(message, dict) else ""
    return str(obj.get("text", ""))


def request_row(s: VoiceSettings, rec: RequestRecord, item: SpeechItem | None) -> dict[str, Any]:
    """One request's row: its index, outcome and figures (pytps.measure.voice). A compressed
    stream is decoded here, after the response (off the stamp path); a body the decoder cannot
    read is the request's protocol error."""
    decoded = None
    if s.api == "openai-speech" and s.audio_format in CODED_FORMATS and rec.ok:
        decoded = decode_reads(s.audio_format, rec.body, [int(n) for n in rec.output_chars])
        if decoded.error:
            rec.error, rec.error_detail = ERROR_PROTOCOL, decoded.error
        rec.body = b""  # decoded: the bytes are not kept with the run's records
    row: dict[str, Any] = {"index": rec.index, "ok": rec.ok, "error": rec.error, "error_detail": rec.error_detail}
    if not rec.ok:
        return row
    row["t_send_ns"] = rec.t_send_ns  # the HTML page's stall timeline places each request by it
    if s.api == "openai-speech":
        speech = speech_figures(rec, s.pcm, s.playback_buffer_ms, decoded)
        row.update(speech.row())
        # When the simulated player started and each stall began, from the send (seconds).
        play = speech.playback
        row["play_start_s"] = (play.start_ns - rec.t_send_ns) / 1e9 if play.start_ns else None
        row["stall_at_s"] = [(t - rec.t_send_ns) / 1e9 for t in play.stall_at_ns]
    else:
        assert item is not None
        fig = transcription_figures(rec, _transcript(rec), item.seconds, item.reference)
        row.update(fig.row())
        row["text"] = fig.text
    return row


async def run_voice(settings: VoiceSettings) -> VoiceResult:
    """Runs the requests at the settings' concurrency; warm-up requests are sent first, not counted."""
    from pytps.transport.native_transport import NativeTransport

    s = settings.check()
    timeouts = Timeouts(read_s=s.read_timeout_s)
    transport = NativeTransport(s.base_url, timeouts=timeouts, max_connections=s.concurrency + 1)
    rows: list[dict[str, Any]] = []
    records: list[RequestRecord] = []
    try:
        for i in range(s.warmup):
            spec, _ = s.spec(i, True)
            await transport.send(spec)
        specs = [s.spec(s.warmup + i, False) for i in range(s.requests)]
        queue: asyncio.Queue[tuple[RequestSpec, SpeechItem | None]] = asyncio.Queue()
        for pair in specs:
            queue.put_nowait(pair)

        async def worker() -> None:
            while not queue.empty():
                spec, item = queue.get_nowait()
                rec = await transport.send(spec)
                records.append(rec)
                rows.append(request_row(s, rec, item))

        t0 = time.monotonic_ns()
        await asyncio.gather(*(worker() for _ in range(min(s.concurrency, s.requests))))
        wall_s = (time.monotonic_ns() - t0) / 1e9
    finally:
        await transport.aclose()
    rows.sort(key=lambda r: int(r["index"]))
    records.sort(key=lambda r: r.index)
    return VoiceResult(s, rows, summarize_voice(s.api, rows, wall_s), records, wall_s)


def run_voice_sync(settings: VoiceSettings) -> VoiceResult:
    """run_voice in a new event loop (the CLI's and a script's entry point)."""
    return asyncio.run(run_voice(settings))
