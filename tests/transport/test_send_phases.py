"""Issue 29 (4): every transport records `send` and `wait_headers` on every request, and `connect`
where it opened a connection (docs/results.md, phases_ns), so server queueing is told apart from
the client's send."""

from __future__ import annotations

import asyncio

import pytest

import pytps
from pytps.runner.config import make_config
from pytps.runner.loop import Runner


@pytest.mark.parametrize("transport", ["native", "asyncio", "httpx"])
def test_every_request_has_send_and_wait_headers(transport, tmp_path):
    with pytps.Emulator(ttft_ms=5, itl_us=100) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "out", requests=5, concurrency=1, output_tokens=4,
                          input_tokens=16, transport=transport)  # fmt: skip
        result = asyncio.run(Runner(cfg, keep_records=True).run())
    records = sorted(result.records, key=lambda r: r.index)
    assert len(records) == 5 and all(r.ok for r in records)
    for r in records:
        assert {"send", "wait_headers"} <= set(r.phases_ns), (transport, r.phases_ns)
        assert r.phases_ns["send"] >= 0 and r.phases_ns["wait_headers"] >= 0
        # The head is complete after the last byte was sent and before the first token.
        assert r.t_send_ns <= r.t_headers_ns - r.phases_ns["wait_headers"] <= r.t_headers_ns
    assert sum("connect" in r.phases_ns for r in records) >= 1  # the kept-alive connection's first
