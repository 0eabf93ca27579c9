"""A raw-socket HTTP/1.1 client for the emulator tests: no pytps client code, no HTTP library,
so the bytes the emulator writes are exactly the bytes checked."""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field


@dataclass
class Response:
    status: int
    reason: str
    headers: dict[str, str]
    body: bytes                     # de-chunked
    chunks: list[bytes] = field(default_factory=list)  # one entry per HTTP chunk (one per write)
    complete: bool = True           # the body ended properly (terminating chunk / full length)
    raw_head: bytes = b""

    def json(self):
        return json.loads(self.body)

    def sse(self) -> list[tuple[str | None, str]]:
        """(event name or None, data) per SSE event; comments dropped."""
        out = []
        for block in self.body.decode().split("\n\n"):
            if not block:
                continue
            name, data = None, []
            for line in block.split("\n"):
                if line.startswith(":"):
                    continue
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            if data:
                out.append((name, "\n".join(data)))
        return out

    def sse_json(self) -> list[tuple[str | None, dict]]:
        return [(n, json.loads(d)) for n, d in self.sse() if d != "[DONE]"]

    def ndjson(self) -> list[dict]:
        return [json.loads(line) for line in self.body.decode().split("\n") if line]


class Conn:
    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request_bytes(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                      version: str = "HTTP/1.1") -> bytes:
        lines = [f"{method} {path} {version}", "Host: 127.0.0.1"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append("Content-Type: application/json")
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")

    def send(self, method: str, path: str, body=None, headers=None, version="HTTP/1.1") -> None:
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        self.send_raw(self.request_bytes(method, path, body, headers, version))

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        return True

    def _read_until(self, sep: bytes) -> bytes | None:
        while sep not in self.buf:
            if not self._fill():
                return None
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def _read_n(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self._fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, head_only: bool = False) -> Response:
        head = self._read_until(b"\r\n\r\n")
        if head is None:
            raise ConnectionError("connection closed before a response head")
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3}) (.*)", lines[0])
        assert m, lines[0]
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        resp = Response(int(m.group(1)), m.group(2), headers, b"", raw_head=head + b"\r\n\r\n")
        if resp.status == 100 or head_only:
            return resp
        if headers.get("transfer-encoding") == "chunked":
            while True:
                size_line = self._read_until(b"\r\n")
                if size_line is None:
                    resp.complete = False
                    break
                size = int(size_line, 16)
                if size == 0:
                    assert self._read_until(b"\r\n") == b""
                    break
                data = self._read_n(size + 2)
                if data is None:
                    resp.complete = False
                    break
                assert data.endswith(b"\r\n")
                resp.chunks.append(data[:-2])
                resp.body += data[:-2]
        elif "content-length" in headers:
            data = self._read_n(int(headers["content-length"]))
            resp.complete = data is not None
            resp.body = data or b""
        else:
            while self._fill():
                pass
            resp.body, self.buf = self.buf, b""
        return resp

    def closed_by_peer(self) -> bool:
        """True when the server closed the connection (EOF with nothing pending)."""
        if self.buf:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def call(port: int, method: str, path: str, body=None, headers=None) -> Response:
    with Conn(port) as c:
        c.send(method, path, body, headers)
        return c.read_response()


_CREATED = re.compile(rb'"(created|created_at)":(\d+|"[0-9T:.\-]+Z")')
_DURATION = re.compile(rb'"(total_duration|prompt_eval_duration|eval_duration|prompt_ms|predicted_ms)":[0-9.]+')


def normalize(body: bytes) -> bytes:
    """Replaces wall-clock stamps and durations (the only run-dependent bytes) with fixed values."""
    body = _CREATED.sub(lambda m: b'"' + m.group(1) + b'":0', body)
    return _DURATION.sub(lambda m: b'"' + m.group(1) + b'":0', body)
