"""A user's own transport for tests: answers every request with three events, no network."""

from __future__ import annotations

import json

from pytps._native import _core
from pytps.measure.records import RequestRecord
from pytps.transport.base import RequestSpec


class CannedTransport:
    """Each request: three one-token events 1 us apart, and the terminal marker."""

    name = "canned"
    schedule_lead_ns = 0
    tls_library = None
    thread_cpu_s = None

    def __init__(self) -> None:
        self.sent: list[RequestSpec] = []

    async def send(self, spec: RequestSpec) -> RequestRecord:
        self.sent.append(spec)
        rec = spec.new_record(self.name)
        rec.t_submit_ns = rec.t_send_ns = _core.now_ns()
        recorder = _core.StreamRecorder(spec.dialect)
        for i in range(3):
            chunk = {"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}
            recorder.feed(b"data: " + json.dumps(chunk).encode() + b"\n\n", rec.t_send_ns + (i + 1) * 1000)
        recorder.feed(b"data: [DONE]\n\n", rec.t_send_ns + 4000)
        recorder.close(rec.t_send_ns + 4000)
        rec.status = 200
        rec.t_done_ns = rec.t_send_ns + 4000
        rec.fill_from_recorder(recorder)
        return rec

    async def aclose(self) -> None:
        raise AssertionError("the runner closes only the transports it made")
