"""A realtime transcription endpoint on 127.0.0.1 with a truth (`--api openai-realtime`'s emulator):
a WebSocket server (the `websockets` library's sans-I/O ServerProtocol over an asyncio server of
our own, in a thread of its own) speaking OpenAI's transcription session and vLLM's /v1/realtime.

Deltas are paced against the audio received: a word is sent each time the session's audio has
grown by another 1/words_per_s seconds; on commit (end of speech) the final transcript follows
after final_ms. Truth per session (CLOCK_MONOTONIC ns): when each audio append and the commit
arrived (stamped in data_received, right after the socket read), when each delta and the final
were sent (stamped right before the socket write of their frame), and the transcript.

It is Python, not the C++ emulator: a busy interpreter delays its writes, but each stamp is taken
next to its socket call, so the truth says when the bytes left, however late (docs/voice.md).
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import threading
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from websockets.frames import Frame

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


class _Connection(asyncio.Protocol):
    """One WebSocket connection: websockets' ServerProtocol over an asyncio transport. Complete
    text messages go to a queue as (receive stamp, text); send() returns its write's stamp."""

    def __init__(self, serve: Any) -> None:
        from websockets.frames import Opcode
        from websockets.http11 import Request
        from websockets.server import ServerProtocol

        self.ws = ServerProtocol(max_size=None)
        self.serve = serve  # the session coroutine, started once the handshake is done
        self.inbox: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue()
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self._parts: list[bytes] = []
        self._opcode = Opcode
        self._request = Request

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass: a cast

    def data_received(self, data: bytes) -> None:
        t = _core.now_ns()  # right after the socket read
        Opcode = self._opcode
        self.ws.receive_data(data)
        for event in self.ws.events_received():
            if isinstance(event, self._request):
                self.ws.send_response(self.ws.accept(event))
                self._write()
                if self.ws.handshake_exc is None:
                    self.task = asyncio.get_running_loop().create_task(self.serve(self))
                continue
            frame = cast("Frame", event)
            if frame.opcode is Opcode.TEXT:
                self._parts = [bytes(frame.data)]
            elif frame.opcode is Opcode.CONT:
                self._parts.append(bytes(frame.data))
            else:
                continue
            if frame.fin:
                self.inbox.put_nowait((t, b"".join(self._parts).decode()))
        self._write()

    def eof_received(self) -> bool | None:
        self.ws.receive_eof()
        self._write()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.inbox.put_nowait(None)

    def send(self, obj: dict[str, Any]) -> int:
        """Sends obj as a text message; returns the stamp taken right before its socket write."""
        self.ws.send_text(json.dumps(obj).encode())
        return self._write()

    def close(self) -> None:
        from websockets.protocol import State

        if self.ws.state is State.OPEN:
            self.ws.send_close(1000)
            self._write()
        if self.transport is not None:
            self.transport.close()

    def _write(self) -> int:
        assert self.transport is not None
        out = b"".join(self.ws.data_to_send())
        t = _core.now_ns()
        if out and not self.transport.is_closing():
            self.transport.write(out)
        return t


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
        self._loop = asyncio.get_running_loop()
        self._stop = self._loop.create_future()
        server = await self._loop.create_server(lambda: _Connection(self._session), "127.0.0.1", 0)
        async with server:
            self.port = server.sockets[0].getsockname()[1]
            gc.freeze()  # the start-up's heap out of the collector: no full-heap walk next to a stamp
            self._ready.set()
            await self._stop

    async def _session(self, ws: _Connection) -> None:
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
        try:
            while (item := await ws.inbox.get()) is not None:
                t, message = item
                event = json.loads(message)
                kind = event.get("type", "")
                if kind in ("transcription_session.update", "session.update"):
                    rec["shape"] = "openai" if kind.startswith("transcription") else "vllm"
                    created = "transcription_session.created" if rec["shape"] == "openai" else "session.created"
                    ws.send({"type": created})
                elif kind == "input_audio_buffer.append":
                    rec["appends_ns"].append(t)
                    rec["audio_bytes"] += len(base64.b64decode(event.get("audio", "")))
                    while rec["audio_bytes"] >= (len(words) + 1) * bytes_per_word:
                        word = _WORDS[len(words) % len(_WORDS)]
                        delta = word if not words else " " + word
                        words.append(word)
                        rec["deltas_sent_ns"].append(ws.send(_transcription(rec["shape"], delta, final=False)))
                elif kind == "input_audio_buffer.commit":
                    rec["commit_ns"] = t
                    await asyncio.sleep(max(0.0, (t + self.final_ns - now()) / 1e9))
                    text = " ".join(words)
                    rec["transcript"] = text
                    rec["final_sent_ns"] = ws.send(_transcription(rec["shape"], text, final=True))
                    break
        finally:
            ws.close()
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
