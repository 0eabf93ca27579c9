"""A hostile server on 127.0.0.1 with one mode per misbehaviour (the issue-27 matrix), and a way
to run `pytps` on it in a child process whose peak RSS and stderr are kept.

Each mode is a FaultServer handler (tests/fault_servers.py): it reads the request and answers it
the hostile way. `python tests/hostile.py MODE` serves one mode and prints its URL (for a shell)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from fault_servers import SSE_HEAD, FaultServer, Reader, Request, chunk, event, read_body, reset, reset_mid_stream

CORPUS = Path(__file__).parent / "emulator_corpus"
#: Per dialect: its stream template (the emulator's own corpus) and its content type.
TEMPLATES = {
    "openai-chat": ("chat_stream_usage.txt", "text/event-stream"),
    "openai-completions": ("completions_stream.txt", "text/event-stream"),
    "openai-responses": ("responses_stream.txt", "text/event-stream"),
    "anthropic": ("messages_stream.txt", "text/event-stream"),
    "ollama": ("ollama_chat_stream.txt", "application/x-ndjson"),
}
USAGE_KEYS = (
    "prompt_tokens|completion_tokens|total_tokens|input_tokens|output_tokens|cached_tokens|"
    "prompt_eval_count|eval_count|cache_read_input_tokens|reasoning_tokens"
)


def stream_with_usage(api: str, value: str) -> tuple[bytes, str]:
    """The dialect's template stream with every usage count replaced by the JSON text `value`."""
    name, content_type = TEMPLATES[api]
    text = (CORPUS / name).read_text()
    if api == "openai-chat":  # the template reports no cached tokens: give it some to corrupt
        text = text.replace('"total_tokens":12}', '"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}')
    text = re.sub(rf'"({USAGE_KEYS})":\s*-?\d+', lambda m: f'"{m.group(1)}":{value}', text)
    return text.encode(), content_type


def answer(body: bytes, content_type: str = "text/event-stream", status: str = "200 OK", extra: str = "") -> Callable:
    """A handler that answers every request with `body`, chunked."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n{extra}\r\n".encode()

    def handler(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
        if not read_body(reader, req):
            return False
        conn.sendall(head + (chunk(body) if body else b"") + b"0\r\n\r\n")
        return True

    return handler


def five_events_claiming(completion_tokens: int) -> bytes:
    """A 5-event OpenAI chat stream whose usage says `completion_tokens`."""
    usage = {"prompt_tokens": 8, "completion_tokens": completion_tokens, "total_tokens": completion_tokens + 8}
    last = {"id": "r", "object": "chat.completion.chunk", "choices": [], "usage": usage}
    return b"".join(event("hi") for _ in range(5)) + b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n"


def echo_headers(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A 400 whose body echoes the request line and headers (as some gateways do)."""
    if not read_body(reader, req):
        return False
    body = json.dumps({"error": {"message": "bad request: " + req.head.decode("latin-1")}}).encode()
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return True


def html_login(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A proxy's sign-in page: 200 text/html to a streaming request."""
    if not read_body(reader, req):
        return False
    body = b"<html><head><title>Sign in</title></head><body>" + b"x" * 200 + b"</body></html>"
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return True


def redirect(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A 302 to another host."""
    if not read_body(reader, req):
        return False
    conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/login\r\nContent-Length: 0\r\n\r\n")
    return True


def reset_at_once(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """The request read, then a TCP reset and no byte of a response."""
    read_body(reader, req)
    reset(conn)
    return False


def bogus_chunk_size(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A chunk size that is not hex."""
    if not read_body(reader, req):
        return False
    conn.sendall(SSE_HEAD + b"zz\r\n" + event("hi") + b"\r\n")
    return False


def deep_json(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """One event whose JSON nests 100,000 deep."""
    if not read_body(reader, req):
        return False
    conn.sendall(SSE_HEAD + chunk(b"data: " + b"[" * 100_000 + b"\n\n") + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return True


def long_line(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """A 50 MB data line, then the end of the stream."""
    if not read_body(reader, req):
        return False
    conn.sendall(SSE_HEAD)
    block = b"a" * (1 << 20)
    conn.sendall(chunk(b"data: " + block))
    for _ in range(49):
        conn.sendall(chunk(block))
    conn.sendall(chunk(b"\n\n") + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return True


def http10(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """An HTTP/1.0 answer: no chunking, the body ends with the connection."""
    if not read_body(reader, req):
        return False
    body = b"".join(event("hi") for _ in range(3)) + b"data: [DONE]\n\n"
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + body)
    return False


def continue_100(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """An unasked-for 100 Continue before the real answer."""
    if not read_body(reader, req):
        return False
    conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" + SSE_HEAD + chunk(event("hi")) * 3 + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    return True


def never_answers(srv: FaultServer, conn: socket.socket, reader: Reader, req: Request) -> bool:
    """Reads the request and says nothing until the connection is dropped."""
    read_body(reader, req)
    while not srv.stop.is_set():
        time.sleep(0.05)
    return False


#: mode -> (handler, the error class a request gets). The first two are the issue's defects.
MODES: dict[str, tuple[Callable, str | None]] = {
    "usage_10e15": (answer(five_events_claiming(10**15)), None),
    "echo_headers_400": (echo_headers, "http_400"),
    "html_200": (html_login, "protocol"),
    "redirect_302": (redirect, "http_302"),
    "reset_at_once": (reset_at_once, "no_response"),
    "reset_mid_stream": (reset_mid_stream, "truncated"),
    "bogus_chunk_size": (bogus_chunk_size, "protocol"),
    "deep_json_100k": (deep_json, "protocol"),
    "line_50mb": (long_line, "protocol"),
    "http_1_0": (http10, None),
    "continue_100": (continue_100, None),
    "never_answers": (never_answers, "timeout"),
}

#: Runs `pytps` with argv in this interpreter and prints its own peak RSS (KiB) last on stderr.
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork and exec.
RSS_ENTRY = (
    "import re, sys\n"
    "from pytps.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
    "print('PEAK_RSS_KIB', hwm, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def run_pytps(argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 120.0) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in bytes) of `pytps argv` in a child process."""
    import os

    proc = subprocess.run(
        [sys.executable, "-c", RSS_ENTRY, *argv], capture_output=True, text=True, timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )
    m = re.search(r"PEAK_RSS_KIB (\d+)", proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr, int(m.group(1)) * 1024 if m else -1


if __name__ == "__main__":  # pragma: no cover
    handler, _ = MODES[sys.argv[1]]
    with FaultServer(handler) as srv:
        print(srv.url, flush=True)
        while True:
            time.sleep(1)
