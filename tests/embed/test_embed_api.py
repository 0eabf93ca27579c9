"""The library API around embedding: typed exports, arun() in a running loop, RunResult's lazy
requests and save(), time_stream / StreamTimer (aiohttp, requests), the collectors, and the
pytest fixture (through pytester)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx
import pytest

import pytps
from pytps.results.folder import load_journal

pytest_plugins = ["pytester"]

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def emu():
    with pytps.Emulator(ttft_ms=3, itl_us=300, default_output_tokens=16) as e:
        yield e


def _chat_body(tokens: int = 16) -> dict:
    return {"model": "m", "messages": MESSAGES, "stream": True, "max_tokens": tokens}


def test_exports_are_typed_and_lazy():
    from pytps.results.output import RunResult
    from pytps.transport.base import Transport

    assert pytps.RunResult is RunResult and pytps.Transport is Transport
    for name in ("RunConfig", "RequestRecord", "request_metrics", "summarize", "arun", "instrument", "tag"):
        assert name in pytps.__all__ and getattr(pytps, name) is not None
    # `import pytps` stays cheap: none of the embedding modules, no numpy, no httpx.
    code = "import sys, pytps; print(sorted(m for m in sys.modules if m.startswith(('pytps.embed', 'numpy', 'httpx'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_arun_inside_a_running_loop(tmp_path):
    async def outer():
        # run() refuses politely here; arun() is the coroutine under it.
        with pytest.raises(pytps.ConfigError, match="arun"):
            pytps.run(requests=1)
        return await pytps.arun(requests=4, concurrency=2, out=tmp_path / "r", emulator={"ttft_ms": 1, "itl_us": 100})

    result = asyncio.run(outer())
    assert isinstance(result, pytps.RunResult)
    assert result.summary["requests_ok"] == 4 and result.metadata["model"]
    # .requests reads the journal lazily, as Records with the journal's fields.
    requests = list(result.requests)
    assert [r.as_dict() for r in requests] == load_journal(tmp_path / "r")
    assert all(r.ttft_s > 0 and r.output_tokens > 0 for r in requests)
    saved = result.save(tmp_path / "copy")
    assert json.loads((saved / "results.json").read_text())["summary"]["requests_ok"] == 4
    assert (saved / "requests.jsonl").exists() and (saved / "events.npz").exists()


def test_record_fields_are_requests_jsonl_fields(emu, tmp_path):
    result = pytps.run(emu.base_url, requests=1, out=tmp_path / "r")
    journal_keys = set(next(iter(result.requests)).as_dict())
    client = pytps.instrument(httpx.Client())
    with client.stream("POST", emu.base_url + "/v1/chat/completions", json=_chat_body()) as r:
        r.read()
    record = client.collector.records[0]
    assert journal_keys <= set(record.as_dict())
    for key in journal_keys:
        assert getattr(record, key) == record.as_dict()[key]
    # The summary has results.json's shape.
    assert set(client.collector.summary()) >= set(result.summary) - {"client_cpu_us_per_token"}


def test_time_stream_and_stream_timer_give_the_same_record(emu):
    client = httpx.Client()
    t_send = pytps.now_ns()
    chunks = []
    with client.stream("POST", emu.base_url + "/v1/chat/completions", json=_chat_body()) as r:
        for chunk in r.iter_raw():
            chunks.append((chunk, pytps.now_ns()))
    timer = pytps.StreamTimer("openai-chat", t_send)
    for data, t in chunks:
        timer.feed(data, t)
    a = timer.close()
    assert a.ok and a.output_tokens == 16 and a.ttft_s > 0.002
    # time_stream stamps on arrival; fed the same bytes, it yields them unchanged and frames the same events.
    timed = pytps.time_stream(iter(c for c, _ in chunks), "openai-chat")
    assert list(timed) == [c for c, _ in chunks]
    b = timed.record
    assert b.output_tokens == a.output_tokens and b.response_id == a.response_id and b.ok


def test_time_stream_with_aiohttp(emu):
    aiohttp = pytest.importorskip("aiohttp")

    async def main():
        async with aiohttp.ClientSession() as session:
            t_send = pytps.now_ns()
            async with session.post(emu.base_url + "/v1/chat/completions", json=_chat_body()) as resp:
                timed = pytps.time_stream(resp.content.iter_any(), "openai-chat", t_send)
                return await timed.aconsume()

    record = asyncio.run(main())
    assert record.ok and record.output_tokens == 16 and 0.002 < record.ttft_s < 0.5


def test_time_stream_with_requests(emu):
    requests = pytest.importorskip("requests")
    t_send = pytps.now_ns()
    resp = requests.post(emu.base_url + "/v1/chat/completions", json=_chat_body(), stream=True, timeout=10)
    record = pytps.time_stream(resp.iter_content(chunk_size=None), "openai-chat", t_send).consume()
    assert record.ok and record.output_tokens == 16


def test_time_stream_error_is_recorded_and_raised():
    def broken():
        yield b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n'
        raise ConnectionResetError("gone")

    col = pytps.Collector()
    timed = pytps.time_stream(broken(), "openai-chat", collector=col)
    with pytest.raises(ConnectionResetError):
        list(timed)
    (record,) = col.records
    assert record.error == "truncated" and record.output_events == 1
    with pytest.raises(pytps.ConfigError, match="unknown dialect"):
        pytps.time_stream([], "nope")


def test_collector_journal_callback_and_bounded(emu, tmp_path):
    seen = []
    journal = tmp_path / "calls.jsonl"
    col = pytps.Collector(journal=journal, callback=seen.append)
    bounded = pytps.BoundedCollector(max_records=3)
    client = pytps.instrument(httpx.Client(), collector=col)
    with pytps.collecting(bounded):
        for i in range(5):
            with (
                pytps.tag("even" if i % 2 == 0 else "odd"),
                client.stream("POST", emu.base_url + "/v1/chat/completions", json=_chat_body(8 + i)) as r,
            ):
                r.read()
    col.close()
    assert len(seen) == 5 and seen == col.records
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [line["output_tokens"] for line in lines] == [8, 9, 10, 11, 12]
    assert lines == [r.as_dict() for r in col.records]
    # Bounded: the last 3 records, summaries of all 5 (and per tag) with the full summary's keys.
    assert [r.output_tokens for r in bounded.records] == [10, 11, 12]
    full, running = col.summary(), bounded.summary()
    assert set(running) == set(full) - {"time_series"} | {"time_series"}
    assert running["requests_total"] == 5 and running["output_tokens_total"] == full["output_tokens_total"] == 50
    assert abs(running["ttft_s"]["p50"] - full["ttft_s"]["p50"]) <= full["ttft_s"]["p50"] * 1e-3
    assert bounded.summary("even")["requests_total"] == 3 == col.summary("even")["requests_total"]


def test_pytest_fixture_through_pytester(pytester, emu):
    pytester.makepyfile(
        f"""
        import httpx, pytps

        def test_budget(pytps_records):
            client = pytps.instrument(httpx.Client())
            for _ in range(3):
                with client.stream("POST", "{emu.base_url}/v1/chat/completions",
                                   json={{"model": "m", "messages": [], "stream": True, "max_tokens": 5}}) as r:
                    r.read()
            assert len(pytps_records.records) == 3
            assert pytps_records.summary()["ttft_s"]["p90"] < 0.5

        def test_fresh_each_test(pytps_records):
            assert pytps_records.records == []
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_journal_never_blocks_the_caller(tmp_path):
    # The caller only queues; a slow disk would show up on the writer thread, not here.
    col = pytps.Collector(journal=tmp_path / "j.jsonl", keep=False)
    timer = pytps.StreamTimer("openai-chat")
    timer.feed(b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n', pytps.now_ns())
    record = timer.close()
    t0 = time.perf_counter()
    for _ in range(1000):
        col.add(record)
    queued_s = time.perf_counter() - t0
    col.close()
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 1000
    assert queued_s < 0.5  # loose: queuing 1000 records costs about a millisecond
