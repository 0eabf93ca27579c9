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
start + (k+1)·f, on an absolute schedule (a late frame never delays the next). Every frame is
encoded by the protocol up front, in order, and handed with its due instant to the process's
native sender thread (`_core.FramePacer`): it sleeps until a short spin before each due instant
and writes the frame's bytes to the socket (a duplicate of its descriptor), stamping
CLOCK_MONOTONIC right before the send. The event loop meanwhile only reads. While a session is
paced, every write of its connection goes through that thread, so writes never interleave; the
commit is queued right behind the last frame. A frame's lateness is its write stamp − its due
instant. Over TLS (wss://) the bytes must pass through the loop's TLS transport: there the loop
paces (sleep until 1.5 ms before the due instant, then yield to the loop until it), less precisely.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
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
    frame_sent_ns: list[int] = field(default_factory=list)  # the write's stamp (right before the send)
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
        self._pacer: _core.FramePacer | None = None
        self._channel = 0
        self._fd = -1  # the pacer's duplicate of the socket's descriptor, while paced
        self.sent_ns: list[int] = []  # the pacer's stamps of the stamped writes, once it stopped
        self.write_errno = 0

    def start_pacing(self, pacer: _core.FramePacer) -> bool:
        """From now on every write of this connection goes through pacer (False over TLS, whose
        bytes only the loop's transport can write)."""
        assert self.transport is not None
        sock = self.transport.get_extra_info("socket")
        if self.uri.secure or sock is None or self.transport.get_write_buffer_size() != 0:
            return False
        # A descriptor of the pacer's own: the loop closing its socket (connection lost) can
        # never leave the pacer writing to a number the kernel has given to another file.
        self._fd = os.dup(sock.fileno())
        self._pacer, self._channel = pacer, pacer.open(self._fd)
        return True

    def stop_pacing(self) -> None:
        """Hands writing back to the loop (what the pacer still holds is dropped), keeping the
        pacer's write stamps in sent_ns and a failed write's errno in write_errno."""
        if self._pacer is None:
            return
        sent_ns, _, err = self._pacer.close(self._channel)  # no write of ours under way after it
        self._pacer = None
        os.close(self._fd)
        self._fd = -1
        self.sent_ns, self.write_errno = sent_ns, err

    def encode_text(self, text: str) -> bytes:
        """One text message's frame bytes, encoded by the protocol now (in order) and sent later."""
        self._flush()  # anything already queued leaves first
        self.ws.send_text(text.encode())
        return b"".join(self.ws.data_to_send())

    def send_frames(self, due_ns: list[int], frames: list[bytes]) -> bool:
        """frames[i] written at due_ns[i] (non-decreasing), each write stamped."""
        assert self._pacer is not None
        return self._pacer.send_frames(self._channel, due_ns, frames)

    def send_at(self, due_ns: int, data: bytes) -> bool:
        assert self._pacer is not None
        return self._pacer.send(self._channel, due_ns, data)

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
        self.stop_pacing()
        self._settle(self.opened, exc or ConnectionError("the connection closed during the handshake"))
        self._settle(self.closed, None)

    def send_text(self, text: str) -> None:
        self.ws.send_text(text.encode())
        self._flush()

    def close(self) -> None:
        self.stop_pacing()  # first, whatever the transport's state: the stamps are read after this
        if self.transport is not None and not self.transport.is_closing():
            from websockets.protocol import State

            if self.ws.state is State.OPEN:
                self.ws.send_close(1000)
                self._flush()
            self.transport.close()

    def _flush(self) -> None:
        assert self.transport is not None
        for data in self.ws.data_to_send():
            if data and self._pacer is not None:
                self._pacer.send(self._channel, 0, data)  # at once, between two frames
            elif data:
                self.transport.write(data)
            else:  # the end of the stream (after the closing handshake): the loop writes it
                self.stop_pacing()
                if self.transport.can_write_eof():
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


_PACER: _core.FramePacer | None = None
_PACER_PID = 0


def _pacer() -> _core.FramePacer:
    """The process's sender thread, started on first use (it sleeps in the kernel when idle).
    Its busy-wait before a due instant adapts to the wake-ups' lateness, capped at 50 µs: 64
    sessions' frames cost it about 29 µs of CPU each with that cap, 45 µs with 100 µs, 17-20 µs
    with none (whose median frame is some 20 µs late rather than 1 µs). It asks for SCHED_FIFO
    where the process may (root or CAP_SYS_NICE), as audio players do: a normal thread waits
    behind the other runnable threads of its core for up to a time slice (ms), which was most of
    frames' p99 lateness on a quiet machine; refused, it runs as a normal thread."""
    global _PACER, _PACER_PID
    if _PACER is None or os.getpid() != _PACER_PID:  # a forked child has the object, not the thread
        _PACER, _PACER_PID = _core.FramePacer(spin_ns=50_000, realtime=True), os.getpid()
    return _PACER


async def _paced_on_loop(
    conn: _WebSocket, rec: RealtimeRecord, messages: list[str], frame_ns: int, done: asyncio.Future[None]
) -> None:
    """The event loop's own pacing, for TLS connections: sleep until _SPIN_NS before each frame is
    due, then yield to the loop until it is (so receipts go on being stamped while it waits)."""
    now = _core.now_ns
    start = now() + 2 * frame_ns
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
    native = False  # paced by the native sender thread
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
        native = conn.start_pacing(_pacer())  # before the first write: every write goes through it
        conn.send_text(json.dumps(update))
        messages = [
            json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(f).decode()}) for f in frames
        ]
        commit: dict[str, Any] = {"type": "input_audio_buffer.commit"}
        if shape == "vllm":
            commit["final"] = True
        if native:
            # Encoded now, in order, by the protocol; written by the pacer thread when due.
            encoded = [conn.encode_text(m) for m in messages]
            end_bytes = conn.encode_text(json.dumps(commit))
            start = now() + 2 * frame_ns  # time to settle before the first frame
            rec.t_speech_start_ns = start
            rec.frame_due_ns = [start + (k + 1) * frame_ns for k in range(len(encoded))]
            rec.t_speech_end_ns = start + len(encoded) * frame_ns
            conn.send_frames(rec.frame_due_ns, encoded)
            del encoded  # copied into the pacer
            conn.send_at(rec.t_speech_end_ns, end_bytes)  # right behind the last frame
            await asyncio.wait_for(asyncio.shield(done), timeout_s + (rec.t_speech_end_ns - now()) / 1e9)
        else:
            await _paced_on_loop(conn, rec, messages, frame_ns, done)
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
            if native:
                rec.frame_sent_ns = conn.sent_ns
                del rec.frame_due_ns[len(conn.sent_ns) :]  # frames never sent have no lateness
            if conn.write_errno and rec.t_final_ns is None:
                rec.error = rec.error or f"a write to the server failed: {os.strerror(conn.write_errno)}"
    if not rec.text:
        rec.text = "".join(deltas).strip()
    return rec
