"""One realtime transcription session over WebSocket: audio sent at the speed of speech in frames
of frame_ms, the server's deltas and final transcript stamped as they arrive. OpenAI's
transcription session (`transcription_session.update`, `input_audio_buffer.append`/`commit`,
`conversation.item.input_audio_transcription.delta` / `.completed`) and vLLM's /v1/realtime
(`session.update`, `commit` with `final: true`, `transcription.delta` / `transcription.done`).

The WebSocket protocol is the `websockets` library's sans-I/O ClientProtocol, driven from an
asyncio Protocol of our own: its data_received stamps CLOCK_MONOTONIC ns first, right after the
event loop's socket read, before the frame is parsed; a message's stamp is that of the read which
completed it. (The library's asyncio connection hands a message over through a future, one loop
iteration or more after the read, and that hop is where a loaded loop's delay went.)

Pacing: frame k carries audio [k·f, (k+1)·f) and is due when that audio has been spoken,
start + (k+1)·f, on an absolute schedule (a late frame never delays the next). The sender sleeps
until 1.5 ms before a frame is due, then yields to the event loop until it is due, so receipts go
on being stamped while it waits. Each frame's lateness (send call start − due) is kept.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from websockets.frames import Frame

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


class _WebSocket(asyncio.Protocol):
    """A WebSocket client connection: websockets' ClientProtocol over an asyncio transport.
    on_text(t_ns, text) is called for each complete text message, t_ns the stamp of its last read."""

    def __init__(self, url: str, on_text: Callable[[int, str], None], max_size: int | None = None) -> None:
        from websockets.client import ClientProtocol
        from websockets.frames import Opcode
        from websockets.http11 import Response
        from websockets.uri import parse_uri

        self.uri = parse_uri(url)
        self.ws = ClientProtocol(self.uri, max_size=max_size)
        self.on_text = on_text
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._parts: list[bytes] = []
        self._text = False
        self._opcode = Opcode
        self._response = Response

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass: a cast
        self.ws.send_request(self.ws.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        t = _core.now_ns()  # the receive stamp: first, before any parsing
        self.ws.receive_data(data)
        self._events(t)

    def eof_received(self) -> bool | None:
        t = _core.now_ns()
        self.ws.receive_eof()  # a response without a length ends here
        self._events(t)
        return None

    def _events(self, t: int) -> None:
        Opcode, Response = self._opcode, self._response
        for event in self.ws.events_received():
            if isinstance(event, Response):
                exc = self.ws.handshake_exc
                self._settle(self.opened, None if exc is None else exc)
                continue
            frame = cast("Frame", event)
            if frame.opcode is Opcode.TEXT or frame.opcode is Opcode.BINARY:
                self._text = frame.opcode is Opcode.TEXT
                self._parts = [bytes(frame.data)]
            elif frame.opcode is Opcode.CONT:
                self._parts.append(bytes(frame.data))
            else:  # ping (its pong is queued by the protocol), pong, close
                continue
            if frame.fin and self._text:
                self.on_text(t, b"".join(self._parts).decode())
        if self.ws.handshake_exc is not None:  # a response that was not a WebSocket's
            self._settle(self.opened, self.ws.handshake_exc)
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._settle(self.opened, exc or ConnectionError("the connection closed during the handshake"))
        self._settle(self.closed, None)

    def send_text(self, text: str) -> None:
        self.ws.send_text(text.encode())
        self._flush()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            from websockets.protocol import State

            if self.ws.state is State.OPEN:
                self.ws.send_close(1000)
                self._flush()
            self.transport.close()

    def _flush(self) -> None:
        assert self.transport is not None
        for data in self.ws.data_to_send():
            if data:
                self.transport.write(data)
            elif self.transport.can_write_eof():
                self.transport.write_eof()

    @staticmethod
    def _settle(fut: asyncio.Future[None], exc: BaseException | None) -> None:
        if fut.done():
            return
        if exc is None:
            fut.set_result(None)
        else:
            fut.set_exception(exc)


async def _connect(url: str, on_text: Callable[[int, str], None]) -> _WebSocket:
    loop = asyncio.get_running_loop()
    conn = _WebSocket(url, on_text)
    uri = conn.uri
    tls = ssl.create_default_context() if uri.secure else None
    await loop.create_connection(lambda: conn, uri.host, uri.port, ssl=tls)
    await conn.opened
    return conn


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
    now = _core.now_ns
    rec = RealtimeRecord()
    frame_bytes = max(2, round(sample_rate * frame_ms / 1000) * 2)
    frames = [pcm[i : i + frame_bytes] for i in range(0, len(pcm), frame_bytes)]
    frame_ns = round(frame_ms * 1e6)
    loop = asyncio.get_running_loop()
    deltas: list[str] = []
    done: asyncio.Future[None] = loop.create_future()

    def on_text(t: int, message: str) -> None:
        if done.done():
            return
        try:
            event = json.loads(message)
            kind = event.get("type", "")
        except (ValueError, AttributeError):
            rec.error = f"the server sent a message that is not a JSON object: {message[:80]!r}"
            done.set_result(None)
            return
        if kind in _DELTAS:
            rec.delta_ns.append(t)
            deltas.append(str(event.get("delta", "")))
        elif kind in _FINALS:
            rec.t_final_ns = t
            rec.text = str(event.get("transcript", event.get("text", "")))
            done.set_result(None)
        elif kind == "error":
            rec.error = str(event.get("error", event))
            done.set_result(None)

    conn: _WebSocket | None = None
    try:
        conn = await asyncio.wait_for(
            _connect(url + ("?intent=transcription" if shape == "openai" else ""), on_text), timeout_s
        )
        closed = conn.closed

        def on_closed(_: asyncio.Future[None]) -> None:
            if not done.done():
                done.set_exception(ConnectionError("the server closed the connection before the final transcript"))

        closed.add_done_callback(on_closed)
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
        conn.send_text(json.dumps(update))
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
            if done.done():
                break
            rec.frame_due_ns.append(due)
            rec.frame_sent_ns.append(now())
            conn.send_text(message)
        rec.t_speech_end_ns = start + len(messages) * frame_ns
        commit: dict[str, Any] = {"type": "input_audio_buffer.commit"}
        if shape == "vllm":
            commit["final"] = True
        if not done.done():
            conn.send_text(json.dumps(commit))
        await asyncio.wait_for(asyncio.shield(done), timeout_s)
    except (OSError, asyncio.TimeoutError) as exc:
        rec.error = rec.error or f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # websockets' handshake and protocol errors: one line on the record
        rec.error = rec.error or f"{type(exc).__name__}: {exc}"
    finally:
        if conn is not None:
            conn.close()
    if not rec.text:
        rec.text = "".join(deltas).strip()
    return rec
