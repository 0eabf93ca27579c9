"""One realtime transcription session over WebSocket (the `websockets` library): audio sent at the
speed of speech in frames of frame_ms, the server's deltas and final transcript stamped as they
arrive. OpenAI's transcription session (`transcription_session.update`,
`input_audio_buffer.append`/`commit`, `conversation.item.input_audio_transcription.delta` /
`.completed`) and vLLM's /v1/realtime (`session.update`, `commit` with `final: true`,
`transcription.delta` / `transcription.done`).

Pacing: frame k carries audio [k·f, (k+1)·f) and is due when that audio has been spoken,
start + (k+1)·f, on an absolute schedule (a late frame never delays the next). The sender sleeps
until 1.5 ms before a frame is due, then yields to the event loop until it is due, so receipts go
on being stamped while it waits. Each frame's lateness (send call start − due) is kept.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import Any

from pytps._native import _core

__all__ = ["REALTIME_SHAPES", "RealtimeRecord", "realtime_session"]

REALTIME_SHAPES = ("openai", "vllm")
_SPIN_NS = 1_500_000
_DELTAS = ("conversation.item.input_audio_transcription.delta", "transcription.delta")
_FINALS = ("conversation.item.input_audio_transcription.completed", "transcription.done")


@dataclass
class RealtimeRecord:
    """What one session measured (CLOCK_MONOTONIC ns)."""

    t_speech_start_ns: int = 0  # the schedule's start: the first audio is spoken from here
    t_speech_end_ns: int = 0  # the last frame's due instant: the end of the speech
    frame_due_ns: list[int] = field(default_factory=list)
    frame_sent_ns: list[int] = field(default_factory=list)  # the send call's start
    delta_ns: list[int] = field(default_factory=list)
    t_final_ns: int | None = None
    text: str = ""
    error: str | None = None


async def realtime_session(
    url: str,
    shape: str,
    model: str,
    pcm: bytes,
    *,
    sample_rate: int = 24000,
    frame_ms: float = 20.0,
    timeout_s: float = 60.0,
) -> RealtimeRecord:
    """Streams pcm (16-bit mono at sample_rate) to a realtime endpoint at the speed of speech."""
    from websockets.asyncio.client import connect

    now = _core.now_ns
    rec = RealtimeRecord()
    frame_bytes = max(2, round(sample_rate * frame_ms / 1000) * 2)
    frames = [pcm[i : i + frame_bytes] for i in range(0, len(pcm), frame_bytes)]
    frame_ns = round(frame_ms * 1e6)
    loop = asyncio.get_running_loop()
    deltas: list[str] = []
    done = loop.create_future()

    async def receive(ws: Any) -> None:
        async for message in ws:
            t = now()
            event = json.loads(message)
            kind = event.get("type", "")
            if kind in _DELTAS:
                rec.delta_ns.append(t)
                deltas.append(str(event.get("delta", "")))
            elif kind in _FINALS:
                rec.t_final_ns = t
                rec.text = str(event.get("transcript", event.get("text", "")))
                break
            elif kind == "error":
                rec.error = str(event.get("error", event))
                break
        if not done.done():
            done.set_result(None)

    try:
        async with connect(url + ("?intent=transcription" if shape == "openai" else ""), max_size=None) as ws:
            if shape == "openai":
                update: dict[str, Any] = {
                    "type": "transcription_session.update",
                    "session": {
                        "input_audio_format": "pcm16",
                        "input_audio_transcription": {"model": model},
                        "turn_detection": None,
                    },
                }
            else:
                update = {"type": "session.update", "model": model}
            await ws.send(json.dumps(update))
            receiver = asyncio.ensure_future(receive(ws))
            messages = [
                json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(f).decode()}) for f in frames
            ]
            start = now() + 2 * frame_ns  # time to settle before the first frame
            rec.t_speech_start_ns = start
            for k, message in enumerate(messages):
                due = start + (k + 1) * frame_ns
                left = due - now() - _SPIN_NS
                if left > 0:
                    await asyncio.sleep(left / 1e9)
                while now() < due:
                    await asyncio.sleep(0)
                rec.frame_due_ns.append(due)
                rec.frame_sent_ns.append(now())
                await ws.send(message)
            rec.t_speech_end_ns = start + len(messages) * frame_ns
            commit: dict[str, Any] = {"type": "input_audio_buffer.commit"}
            if shape == "vllm":
                commit["final"] = True
            await ws.send(json.dumps(commit))
            await asyncio.wait_for(done, timeout_s)
            receiver.cancel()
    except (OSError, asyncio.TimeoutError) as exc:
        rec.error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # websockets' protocol errors: one line on the record
        rec.error = f"{type(exc).__name__}: {exc}"
    if not rec.text:
        rec.text = "".join(deltas).strip()
    return rec
