"""Small misbehaving HTTP/1.1 servers on a loopback address (threads, raw sockets), for the
transport fault tests: each connection is served by a handler that can answer, close, reset or
compress as the fault needs, and the server records every request it saw (on which connection,
when, with which headers), so a test can tell a resend from a reuse."""

from __future__ import annotations

import gzip
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def event(text: str) -> bytes:
    obj = {"id": "r", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def sse_body(tokens: int) -> bytes:
    """A whole chunked OpenAI chat stream of `tokens` one-token events, [DONE] and the last chunk."""
    return b"".join(chunk(event("hi")) for _ in range(tokens)) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


@dataclass
class Request:
    conn_no: int  # which accepted connection (from 0)
    index_on_conn: int  # 0: the connection's first request
    head: bytes
    t_ns: int  # CLOCK_MONOTONIC when the head was complete
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def content_length(self) -> int:
        return int(self.headers.get("content-length", "0"))

    @property
    def tag(self) -> str | None:
        """The request's index as the tests tag it in the body ("req-<n>"), once the body is read."""
        m = re.search(rb"req-(\d+)", self.body)
        return m.group(1).decode() if m else None


class Reader:
    """Buffered reads of one connection: request heads and bodies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        part = self.sock.recv(65536)
        self.buf += part
        return bool(part)

    def head(self) -> bytes | None:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head

    def body(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self._fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


# A handler serves one request: it may read the body (read_body), answer, close or reset; it
# returns True to serve the connection's next request, False to end the connection (closed
# gracefully unless the handler reset it).
Handler = Callable[["FaultServer", socket.socket, Reader, Request], bool]


class FaultServer:
    """Accepts connections on host (127.0.0.1 or ::1) and serves each request with handler."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1") -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: list[Request] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with self.lock:
                no = self.connections
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn, no), daemon=True).start()

    def _handle(self, conn: socket.socket, no: int) -> None:
        reader = Reader(conn)
        try:
            with conn:
                for i in range(1_000_000):
                    head = reader.head()
                    if head is None:
                        return
                    req = Request(no, i, head, time.monotonic_ns())
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.decode("latin-1").partition(":")
                        req.headers[name.strip().lower()] = value.strip()
                    with self.lock:
                        self.requests.append(req)
                    if not self.handler(self, conn, reader, req):
                        return
        except OSError:
            pass

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join()


# ---- building blocks for handlers --------------------------------------------------------------


def read_body(reader: Reader, req: Request) -> bool:
    body = reader.body(req.content_length)
    if body is None:
        return False
    req.body = body
    return True


def reset(conn: socket.socket) -> None:
    """Ends the connection with a TCP reset (SO_LINGER 0) instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def answer_stream(conn: socket.socket, tokens: int = 4) -> None:
    conn.sendall(SSE_HEAD + sse_body(tokens))


# ---- the faults --------------------------------------------------------------------------------


def ok(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A well-behaved server: a 4-token stream, and the connection kept."""
    if not read_body(reader, req):
        return False
    answer_stream(conn)
    return True


def close_after_each_response(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """As llama-server did: the response says keep-alive, then the server closes the connection at
    once, so a client may pick it from its pool while the FIN is on its way."""
    if not read_body(reader, req):
        return False
    answer_stream(conn)
    return False


def stale_on_reuse(how: str) -> Handler:
    """Answers a connection's first request; a second one on it is met with a close (how='fin':
    the request read, then a FIN) or a reset (how='rst') and no byte of a response: a kept-alive
    connection the server had already given up on."""

    def handler(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        if not read_body(reader, req):
            return False
        if req.index_on_conn == 0:
            answer_stream(conn)
            return True
        if how == "rst":
            reset(conn)
        return False

    return handler


def no_response(how: str) -> Handler:
    """Reads every request, then closes (how='fin') or resets (how='rst') without a byte."""

    def handler(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        if not read_body(reader, req):
            return False
        if how == "rst":
            reset(conn)
        return False

    return handler


def reset_mid_stream(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """Two events of a 200 stream, then a reset instead of the rest."""
    if not read_body(reader, req):
        return False
    conn.sendall(SSE_HEAD + chunk(event("hi")) * 2)
    time.sleep(0.05)
    reset(conn)
    return False


def early_413(keep_alive: bool) -> Handler:
    """Answers 413 as soon as the head is in, without reading the body. keep_alive=False: then
    closes (a reset, since the body is left unread); True: says nothing of closing and leaves the
    connection open a while, still not reading, then closes it."""

    def handler(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        if req.content_length <= 64 * 1024:  # a small request is served
            return ok(srv, conn, reader, req)
        body = b"too large"
        close = b"" if keep_alive else b"Connection: close\r\n"
        conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: %d\r\n%s\r\n" % (len(body), close) + body)
        if keep_alive:
            time.sleep(0.5)
        return False

    return handler


GZIP_ERROR = json.dumps({"error": {"message": "the model is overloaded", "type": "server_error"}}).encode()


def gzip_error(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A 500 whose body is gzip-compressed whatever the request asked for (as some proxies do)."""
    if not read_body(reader, req):
        return False
    body = gzip.compress(GZIP_ERROR)
    conn.sendall(
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    return True


def gzip_stream(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A 200 event stream compressed with gzip whatever the request asked for."""
    if not read_body(reader, req):
        return False
    raw = b"".join(event("hi") for _ in range(4)) + b"data: [DONE]\n\n"
    body = gzip.compress(raw)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on (bound and released)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
