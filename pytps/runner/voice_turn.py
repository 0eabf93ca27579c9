"""A voice agent's turn (`pytps run --pipeline stt,chat,tts`): the user's utterance is
transcribed, the transcript is the user message of a streamed chat request, and the reply's text is
handed to text to speech piece by piece as it arrives (pytps.workload.speech_inputs.speakable_pieces:
by sentence, or every N words). Each stage may be another endpoint.

The figure is end of user speech → first audio of the reply, split into three stages that add up
to it exactly (docs/metrics.md, "Voice turn"):

- stt: end of user speech (the upload's last byte sent: the utterance is whole) → the final
  transcript read;
- chat: the final transcript → the read that completed the reply's first speakable piece
  (the hand-off to the chat request included);
- tts: that read → the first audio byte of the piece's speech (its hand-off included).

Transcription and speech go through the native transport; the chat reply through
pytps.transport.streaming_reader, since its text must be acted on while it streams.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from pytps.errors import ConfigError
from pytps.measure.records import RequestRecord
from pytps.measure.voice import PcmFormat
from pytps.measure.voice_summary import describe
from pytps.transport.base import RequestSpec
from pytps.workload.request_formats import build_request
from pytps.workload.speech_inputs import SpeechItem, multipart_body, speakable_pieces, speech_body

__all__ = ["TurnResult", "TurnSettings", "run_turns", "run_turns_sync"]

STAGES = ("stt", "chat", "tts")


@dataclass(frozen=True)
class TurnSettings:
    """The three stages' endpoints and models, the utterances, and the turns to run."""

    stt_url: str
    chat_url: str
    tts_url: str
    stt_model: str
    chat_model: str
    tts_model: str
    items: tuple[SpeechItem, ...]
    turns: int = 4
    concurrency: int = 1
    chat_max_tokens: int = 48
    max_words_per_piece: int = 12
    voice: str = "alloy"
    pcm: PcmFormat = PcmFormat()  # noqa: RUF009 - frozen and immutable

    def check(self) -> TurnSettings:
        if not self.items:
            raise ConfigError("a voice turn needs utterances: --audio-dataset FILE.jsonl, or espeak-ng to make them")
        if self.turns < 1 or self.concurrency < 1:
            raise ConfigError("--requests (turns) and --concurrency must be >= 1")
        return self


@dataclass
class _Prompt:
    messages: list[dict[str, Any]] | None
    text: str | None
    max_tokens: int


@dataclass
class TurnResult:
    settings: TurnSettings
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    wall_s: float


async def _one_turn(s: TurnSettings, index: int, stt: Any, tts: Any) -> dict[str, Any]:
    from pytps.transport.streaming_reader import stream_request

    item = s.items[index % len(s.items)]
    body, ctype = multipart_body({"model": s.stt_model, "response_format": "json", "stream": "true"}, item)
    spec = RequestSpec(index, "/v1/audio/transcriptions", body, {"content-type": ctype}, "transcription")
    stt_rec: RequestRecord = await stt.send(spec)
    row: dict[str, Any] = {"index": index, "ok": False, "error": None}
    if not stt_rec.ok or stt_rec.end_ns is None:
        row["error"] = f"stt: {stt_rec.error}: {stt_rec.error_detail}"
        return row
    t_speech_end = stt_rec.t_send_ns
    t_transcript = stt_rec.end_ns
    path, chat_body = build_request(
        "openai-chat",
        s.chat_model,
        _Prompt([{"role": "user", "content": stt_rec.text}], None, s.chat_max_tokens),
    )
    import json

    chat_spec = RequestSpec(index, path, json.dumps(chat_body).encode(), {}, "openai-chat")
    tts_tasks: list[tuple[int, str, asyncio.Task[RequestRecord]]] = []
    taken = 0  # characters of the reply already handed to text to speech

    def speak(piece: str, t_ready: int) -> None:
        tts_body = speech_body(s.tts_model, piece, voice=s.voice, response_format="pcm", stream_format="audio")
        tts_spec = RequestSpec(index, "/v1/audio/speech", tts_body, {}, "speech-pcm")
        tts_tasks.append((t_ready, piece, asyncio.ensure_future(tts.send(tts_spec))))

    def on_read(recorder: Any, t_ns: int) -> None:
        nonlocal taken
        pieces, rest = speakable_pieces(recorder.recorder.text[taken:], s.max_words_per_piece)
        for p in pieces:
            speak(p, t_ns)
        taken = len(recorder.recorder.text) - len(rest)

    chat_rec = await stream_request(s.chat_url, chat_spec, on_read)
    chat_rec.text = chat_rec.text or ""  # kept: the rest of the reply is read below
    if not chat_rec.ok:
        row["error"] = f"chat: {chat_rec.error}: {chat_rec.error_detail}"
    else:
        rest = chat_rec.text[taken:].strip()
        if rest:  # the reply's end makes its last words a piece
            speak(rest, chat_rec.end_ns or chat_rec.t_done_ns or 0)
    if not tts_tasks:
        row["error"] = row["error"] or "chat: the reply carried no text to speak"
        return row
    results = [await task for _, _, task in tts_tasks]
    first = results[0]
    if not first.ok or len(first.output_times_ns) == 0:
        row["error"] = f"tts: {first.error}: {first.error_detail}"
        return row
    t_piece, first_piece, _ = tts_tasks[0]
    t_audio = int(first.output_times_ns[0])
    row.update(
        ok=row["error"] is None,
        turn_s=(t_audio - t_speech_end) / 1e9,
        stt_s=(t_transcript - t_speech_end) / 1e9,
        chat_s=(t_piece - t_transcript) / 1e9,
        tts_s=(t_audio - t_piece) / 1e9,
        chat_handoff_s=(chat_rec.t_send_ns - t_transcript) / 1e9,
        chat_ttft_s=(chat_rec.first_output_ns - chat_rec.t_send_ns) / 1e9 if chat_rec.first_output_ns else None,
        tts_handoff_s=(first.t_send_ns - t_piece) / 1e9,
        pieces=len(tts_tasks),
        reply_audio_s=sum(int(r.output_chars.sum()) for r in results if r.ok) / s.pcm.bytes_per_s,
        transcript=stt_rec.text,
        first_piece=first_piece,
        # The stamps, for a check against an emulator's truth.
        t_speech_end_ns=t_speech_end,
        t_transcript_ns=t_transcript,
        t_piece_ns=t_piece,
        t_audio_ns=t_audio,
    )
    return row


async def run_turns(settings: TurnSettings) -> TurnResult:
    from pytps.transport.native_transport import NativeTransport

    s = settings.check()
    stt = NativeTransport(s.stt_url, max_connections=s.concurrency + 1)
    tts = NativeTransport(s.tts_url, max_connections=4 * s.concurrency + 1)
    rows: list[dict[str, Any]] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(s.turns):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            rows.append(await _one_turn(s, queue.get_nowait(), stt, tts))

    t0 = time.monotonic_ns()
    try:
        await asyncio.gather(*(worker() for _ in range(min(s.concurrency, s.turns))))
    finally:
        await stt.aclose()
        await tts.aclose()
    wall_s = (time.monotonic_ns() - t0) / 1e9
    rows.sort(key=lambda r: int(r["index"]))
    ok = [r for r in rows if r["ok"]]
    summary = {
        "turns": len(rows),
        "ok": len(ok),
        "errors": len(rows) - len(ok),
        "wall_s": wall_s,
        "figures": {
            n: describe([float(r[n]) for r in ok if r.get(n) is not None])
            for n in ("turn_s", "stt_s", "chat_s", "tts_s", "chat_handoff_s", "chat_ttft_s", "tts_handoff_s")
        },
    }
    return TurnResult(s, rows, summary, wall_s)


def run_turns_sync(settings: TurnSettings) -> TurnResult:
    return asyncio.run(run_turns(settings))
