"""A realtime transcription endpoint on 127.0.0.1 with a truth (`--api openai-realtime`'s emulator):
a WebSocket server (the `websockets` library, in a thread of its own) speaking OpenAI's
transcription session and vLLM's /v1/realtime.

Deltas are paced against the audio received: a word is sent each time the session's audio has
grown by another 1/words_per_s seconds; on commit (end of speech) the final transcript follows
after final_ms. Truth per session: when each audio append and the commit arrived, when each delta
and the final were sent (CLOCK_MONOTONIC ns, the moment the send returned), and the transcript.

It is Python, not the C++ emulator: its stamps are taken by Python code after the message was
parsed or sent, which the truth says as it is (docs/voice.md).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from typing import Any

from pytps._native import _core

__all__ = ["RealtimeEmulator"]

_WORDS = ("the", "voice", "moves", "at", "a", "steady", "pace", "while", "each", "word", "lands", "on", "time")


def _transcription(shape: str | None, text: str, *, final: bool) -> dict[str, Any]:
    """A transcript delta, or the final transcript, as the session's protocol spells it: vLLM's
    /v1/realtime, or OpenAI's transcription session (also for audio sent before any session.update)."""
    if shape == "vllm":
        return {"type": "transcription.done", "text": text} if final else {"type": "transcription.delta", "delta": text}
    prefix = "conversation.item.input_audio_transcription."
    if final:
        return {"type": prefix + "completed", "item_id": "i1", "transcript": text}
    return {"type": prefix + "delta", "item_id": "i1", "delta": text}


class RealtimeEmulator:
    """``with RealtimeEmulator() as emu:`` serves ws://127.0.0.1:<port>/v1/realtime."""

    def __init__(self, *, sample_rate: int = 24000, words_per_s: float = 2.5, final_ms: float = 20.0) -> None:
        self.sample_rate = sample_rate
        self.words_per_s = words_per_s
        self.final_ns = round(final_ms * 1e6)
        self.port = 0
        self._truth: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future[None] | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime"

    def truth(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._truth)

    def __enter__(self) -> RealtimeEmulator:
        self._thread = threading.Thread(target=self._main, name="pytps-realtime-emu", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set_result, None)
        if self._thread is not None:
            self._thread.join(10)

    def _main(self) -> None:
        try:
            import uvloop

            uvloop.run(self._serve())
        except ImportError:
            asyncio.run(self._serve())

    async def _serve(self) -> None:
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        self._stop = self._loop.create_future()
        async with serve(self._session, "127.0.0.1", 0) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop

    async def _session(self, ws: Any) -> None:
        now = _core.now_ns
        bytes_per_word = self.sample_rate * 2 / self.words_per_s
        rec: dict[str, Any] = {
            "shape": None,
            "appends_ns": [],
            "audio_bytes": 0,
            "commit_ns": None,
            "deltas_sent_ns": [],
            "final_sent_ns": None,
            "transcript": "",
        }
        words: list[str] = []

        async def send(obj: dict[str, Any]) -> int:
            await ws.send(json.dumps(obj))
            return now()

        try:
            async for message in ws:
                t = now()
                event = json.loads(message)
                kind = event.get("type", "")
                if kind in ("transcription_session.update", "session.update"):
                    rec["shape"] = "openai" if kind.startswith("transcription") else "vllm"
                    created = "transcription_session.created" if rec["shape"] == "openai" else "session.created"
                    await send({"type": created})
                elif kind == "input_audio_buffer.append":
                    rec["appends_ns"].append(t)
                    rec["audio_bytes"] += len(base64.b64decode(event.get("audio", "")))
                    while rec["audio_bytes"] >= (len(words) + 1) * bytes_per_word:
                        word = _WORDS[len(words) % len(_WORDS)]
                        delta = word if not words else " " + word
                        words.append(word)
                        rec["deltas_sent_ns"].append(await send(_transcription(rec["shape"], delta, final=False)))
                elif kind == "input_audio_buffer.commit":
                    rec["commit_ns"] = t
                    await asyncio.sleep(max(0.0, (t + self.final_ns - now()) / 1e9))
                    text = " ".join(words)
                    rec["transcript"] = text
                    rec["final_sent_ns"] = await send(_transcription(rec["shape"], text, final=True))
                    break
        finally:
            with self._lock:
                self._truth.append(rec)


def main() -> None:
    """`python -m pytps.realtime_emulator TRUTH.json [sample_rate]`: serves in its own process (so a
    client's measurement shares no GIL with it), prints its port, and writes the truth as JSON when
    its stdin closes."""
    import sys

    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 24000
    with RealtimeEmulator(sample_rate=rate) as emu:
        print(emu.port, flush=True)
        sys.stdin.read()
    with open(sys.argv[1], "w") as f:
        json.dump(emu.truth(), f)


if __name__ == "__main__":
    main()
