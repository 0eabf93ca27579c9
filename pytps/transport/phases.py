"""The request phases after the connection (docs/results.md `phases_ns`): `send`, from the
request's first write to its last byte handed to the kernel, and `wait_headers`, from then to the
response head complete, so server queueing is told apart from the client's send. The native and
asyncio transports record them on every request; httpx from httpcore's trace."""

from __future__ import annotations

from pytps.measure.records import RequestRecord


def record_send_phases(rec: RequestRecord, t_write_start_ns: int | None, t_written_ns: int | None) -> None:
    """Adds `send` and `wait_headers` to rec.phases_ns from the stamps known (after fill_from_http)."""
    if t_write_start_ns is not None and t_written_ns is not None and t_written_ns >= t_write_start_ns:
        rec.phases_ns["send"] = t_written_ns - t_write_start_ns
    if t_written_ns is not None and rec.t_headers_ns is not None and rec.t_headers_ns >= t_written_ns:
        rec.phases_ns["wait_headers"] = rec.t_headers_ns - t_written_ns
