"""One request whose response is read as it arrives, for a caller that acts on it mid-stream: the
voice turn (pytps.runner.voice_turn) hands a chat reply's text to text to speech sentence by
sentence while the reply still streams. A fresh connection per request (asyncio streams), every
read stamped right after it returned and fed to a native HttpStreamRecorder at once, then
on_read(recorder, t_ns) called. The stamps are the asyncio transport's kind (Python per read),
not the native engine's: docs/voice.md says so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pytps._native import _core
from pytps.measure.records import ERROR_CONNECT, ERROR_TIMEOUT, RequestRecord
from pytps.transport.base import RequestSpec
from pytps.transport.http1 import Http1Target, fill_from_http

_now_ns = _core.now_ns

__all__ = ["stream_request"]


async def stream_request(
    base_url: str,
    spec: RequestSpec,
    on_read: Callable[[Any, int], None],
    *,
    read_timeout_s: float = 120.0,
) -> RequestRecord:
    """Sends spec on a new connection and reads its response to the end, calling on_read after each
    read was fed; the record as the other transports fill it."""
    target = Http1Target(base_url, "streaming")
    rec = spec.new_record("streaming")
    payload = target.render(spec)
    rec.t_submit_ns = _now_ns()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(target.host, target.port), 10.0)
    except (OSError, asyncio.TimeoutError) as exc:
        rec.t_send_ns = rec.t_done_ns = _now_ns()
        rec.error, rec.error_detail = ERROR_CONNECT, f"{type(exc).__name__}: {exc}"
        return rec
    recorder = _core.HttpStreamRecorder(spec.dialect)
    timeout: str | None = None
    try:
        writer.write(payload)
        await writer.drain()
        rec.t_send_ns = _now_ns()
        while not recorder.message_done and recorder.error is None:
            try:
                data = await asyncio.wait_for(reader.read(65536), read_timeout_s)
            except asyncio.TimeoutError:
                timeout = f"no data for {read_timeout_s} s (read timeout)"
                break
            t = _now_ns()
            if not data:
                recorder.finish_eof(t)
                break
            recorder.feed(data, t)
            on_read(recorder, t)
    finally:
        writer.close()
    rec.t_done_ns = _now_ns()
    recorder.close(rec.t_done_ns)
    fill_from_http(rec, recorder, timeout)
    if timeout is not None:
        rec.error = ERROR_TIMEOUT
    return rec
