"""The realtime transport's WebSocket connection (pytps.transport.realtime._WebSocket): websockets'
sans-I/O client over our own reads. A message is stamped by the read that completed it, whatever
the split of the server's bytes into reads; fragmented messages are joined; a refused handshake is
one line on the session's record."""

from __future__ import annotations

import asyncio
import http.server
import threading
from types import SimpleNamespace
from typing import Any

import pytest

websockets = pytest.importorskip("websockets")

from websockets.frames import Frame, Opcode  # noqa: E402
from websockets.http11 import Request  # noqa: E402
from websockets.server import ServerProtocol  # noqa: E402

from pytps.runner.event_loop import run_coroutine  # noqa: E402
from pytps.transport import realtime  # noqa: E402
from pytps.transport.realtime import realtime_session  # noqa: E402


class _Transport:
    """What the connection writes, kept (the client's side of the socket)."""

    def __init__(self) -> None:
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None: ...
    def is_closing(self) -> bool:
        return False

    def close(self) -> None: ...


def _server_bytes(client_request: bytes) -> bytes:
    """The server's handshake reply, then a whole message, then one in three fragments."""
    server = ServerProtocol()
    server.receive_data(client_request)
    (request,) = server.events_received()
    assert isinstance(request, Request)
    server.send_response(server.accept(request))
    server.send_text(b'{"type": "a"}')
    server.send_frame(Frame(Opcode.TEXT, b'{"type"', fin=False))
    server.send_frame(Frame(Opcode.CONT, b': "b', fin=False))
    server.send_frame(Frame(Opcode.CONT, b'"}', fin=True))
    return b"".join(server.data_to_send())


def test_each_message_stamped_by_the_read_that_completed_it_at_every_split(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0]
    monkeypatch.setattr(realtime, "_core", SimpleNamespace(now_ns=lambda: clock[0]))

    async def main() -> None:
        url = "ws://127.0.0.1:9/v1/realtime"
        for cut in range(1, 400):
            got: list[tuple[int, str]] = []
            conn = realtime._WebSocket(url, lambda t, s, got=got: got.append((t, s)))  # type: ignore[misc]
            transport = _Transport()
            conn.connection_made(transport)  # type: ignore[arg-type]
            reply = _server_bytes(transport.written)
            if cut >= len(reply):
                break
            first_end = reply.index(b"\r\n\r\n") + 4 + 2 + len(b'{"type": "a"}')  # unmasked: a 2-byte header
            clock[0] = 100
            conn.data_received(reply[:cut])
            clock[0] = 200
            conn.data_received(reply[cut:])
            assert conn.opened.done() and conn.opened.exception() is None, cut
            assert got == [(100 if cut >= first_end else 200, '{"type": "a"}'), (200, '{"type": "b"}')], cut
        assert cut > 100

    asyncio.run(main())


@pytest.mark.parametrize("protocol", ["HTTP/1.0", "HTTP/1.1"])
def test_a_refused_handshake_is_one_line_on_the_record(protocol: str) -> None:
    class NotFound(http.server.BaseHTTPRequestHandler):
        protocol_version = protocol

        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: Any) -> None: ...

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"ws://127.0.0.1:{server.server_port}/v1/realtime"
        rec = run_coroutine(realtime_session(url, "openai", "m", b"\0" * 4800, timeout_s=5))
    finally:
        server.shutdown()
        server.server_close()
    assert rec.error is not None and "\n" not in rec.error
    assert ("404" in rec.error) if protocol == "HTTP/1.1" else ("InvalidMessage" in rec.error)
    assert rec.t_final_ns is None and rec.frame_sent_ns == []
