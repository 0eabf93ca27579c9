"""The frames between a run and its grader workers (grading/grader_pool, grading/grader_worker):
a 4-byte big-endian length, then a pickle."""

from __future__ import annotations

import pickle
import struct
from typing import Any, BinaryIO

LENGTH = struct.Struct(">I")


def frame(value: Any) -> bytes:
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return LENGTH.pack(len(body)) + body


def whole(buf: bytes | bytearray) -> bool:
    """Whether buf holds one whole frame."""
    return len(buf) >= LENGTH.size and len(buf) >= LENGTH.size + LENGTH.unpack(bytes(buf[: LENGTH.size]))[0]


def read_frame(f: BinaryIO) -> Any:
    head = f.read(LENGTH.size)
    if len(head) < LENGTH.size:
        raise EOFError
    n = LENGTH.unpack(head)[0]
    body = f.read(n)
    if len(body) < n:
        raise EOFError
    return pickle.loads(body)
