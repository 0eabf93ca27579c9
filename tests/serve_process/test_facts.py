"""ask_routes, the one asker of a server's facts (results.json's metadata.server, server.json's
facts), against a raw HTTP/1.1 server on 127.0.0.1 that answers each route as a test says: one
kept-alive connection, chunked bodies, the byte cap, the deadline, a closed or silent server."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

from fault_servers import FaultServer, Reader, Request

from pytps.serve_process.facts import ask_routes

# handler(path, conn) answers one request; returns False to close the connection after it.
Handler = Callable[[str, socket.socket], bool]


class RawServer:
    """A FaultServer that hands each request's path and connection to a test's handler."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.paths: list[str] = []
        self.server = FaultServer(self._one)
        self.root = self.server.url

    def _one(self, srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        path = req.head.split(b" ")[1].decode()
        self.paths.append(path)
        return self.handler(path, conn)

    @property
    def connections(self) -> int:
        return self.server.connections

    def close(self) -> None:
        self.server.__exit__()


def answer(body: bytes, *, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n" % (status.encode(), len(body), extra) + body


def ask(urls: dict[str, str], **kw: float) -> tuple[str | None, dict[str, bytes]]:
    return asyncio.run(ask_routes(urls, **kw))  # type: ignore[arg-type]


def test_routes_share_one_kept_alive_connection_and_chunked_bodies_are_read_whole():
    def handler(path: str, conn: socket.socket) -> bool:
        if path == "/props":  # chunked, in two chunks
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nServer: fake-llm/2\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"6\r\n{\"a\": \r\n2\r\n1}\r\n0\r\n\r\n"
            )
        elif path == "/version":
            conn.sendall(answer(b'{"version": "9"}'))
        else:
            conn.sendall(answer(b"no", status="404 Not Found"))
        return True

    server = RawServer(handler)
    try:
        urls = {p: server.root + p for p in ("/v1/models", "/props", "/version")}
        header, bodies = ask(urls)
    finally:
        server.close()
    assert header == "fake-llm/2"
    assert bodies == {"/props": b'{"a": 1}', "/version": b'{"version": "9"}'}  # the 404 is absent
    assert server.paths == ["/v1/models", "/props", "/version"] and server.connections == 1


def test_a_body_past_the_cap_is_dropped_and_the_next_route_asked_on_a_new_connection():
    def handler(path: str, conn: socket.socket) -> bool:
        conn.sendall(answer(b"x" * 5000 if path == "/big" else b"small"))
        return True

    server = RawServer(handler)
    try:
        header, bodies = ask({"big": server.root + "/big", "small": server.root + "/small"}, max_bytes=1000)
    finally:
        server.close()
    assert header is None and bodies == {"small": b"small"}
    assert server.connections == 2  # the big answer's connection was not read to its end: not reused


def test_a_server_that_closes_its_kept_alive_connection_is_asked_again_on_a_new_one():
    def handler(path: str, conn: socket.socket) -> bool:
        conn.sendall(answer(path.encode()))
        return False  # closed after each answer, without saying so

    server = RawServer(handler)
    try:
        _, bodies = ask({p: server.root + p for p in ("/a", "/b", "/c")})
    finally:
        server.close()
    assert bodies == {"/a": b"/a", "/b": b"/b", "/c": b"/c"}


def test_a_trickling_server_is_cut_at_the_deadline_and_what_was_learnt_is_kept():
    """1 byte every 0.2 s: each read is within the 1 s timeout, so only the deadline ends it."""

    def handler(path: str, conn: socket.socket) -> bool:
        if path == "/fast":
            conn.sendall(answer(b"fast", extra=b"Server: s\r\n"))
            return True
        for byte in answer(b"slow" * 100):
            if server.stop.is_set():
                return False
            conn.sendall(bytes([byte]))
            time.sleep(0.2)
        return False

    server = RawServer(handler)
    t = time.monotonic()
    try:
        header, bodies = ask({"fast": server.root + "/fast", "slow": server.root + "/slow"}, deadline_s=1.5)
    finally:
        server.close()
    assert time.monotonic() - t < 4
    assert header == "s" and bodies == {"fast": b"fast"}


def test_a_refused_server_is_not_asked_again():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    t = time.monotonic()
    header, bodies = ask({p: f"http://127.0.0.1:{port}{p}" for p in ("/a", "/b", "/c")})
    assert (header, bodies) == (None, {}) and time.monotonic() - t < 2
