"""pytps.instrument with the real OpenAI and Anthropic SDKs against pytps.Emulator on 127.0.0.1:
the SDK sees the same bytes, the records match the emulator's ground truth, tags survive
concurrency, and SDK errors are recorded and still raised as before."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from machine_took import CallTook

import pytps

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

MESSAGES = [{"role": "user", "content": "hello"}]
TTFT_TOLERANCE_S = 0.0005  # the acceptance: TTFT within 0.5 ms of the emulator's truth

SYNC_CLIENTS = {"httpx": httpx.Client, "httpx2": httpx2.Client}
ASYNC_CLIENTS = {"httpx": httpx.AsyncClient, "httpx2": httpx2.AsyncClient}


@pytest.fixture(scope="module")
def emu():
    with pytps.Emulator(ttft_ms=5, itl_us=300, default_output_tokens=24) as e:
        yield e


def _openai_text(client, stream_tokens: int = 24) -> str:
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True, max_tokens=stream_tokens)
    return "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)


def _truth_by_id(emu, n):
    return {t["id"]: t for t in emu.wait_truth(n)}


def _check_against_truth(record, truth, ttft_within_s: float | None = None) -> None:
    """Tokens and events exact, the send stamped before the emulator received it; with
    ttft_within_s, TTFT within that of the emulator's (first event written − request received):
    the timing tier asks 0.5 ms, on a quiet machine. Received: when the kernel had the request on
    the emulator's socket, as pytps calibrate's truth (docs/calibrate.md): the emulator's own
    delay in reading it is TTFT the client really waits (seen: 3.8 ms once in 1,500 calls, with
    the client's send stamp 9 µs before the kernel's)."""
    t = truth[record.response_id]
    received = t["received_kernel_ns"] if t["received_kernel_ns"] is not None else t["received_ns"]
    truth_ttft_s = (int(t["sent_ns"][0]) - received) / 1e9
    if ttft_within_s is not None:
        assert abs(record.ttft_s - truth_ttft_s) < ttft_within_s, (record.ttft_s, truth_ttft_s)
    # Stamped right before the write: the emulator cannot have read the request earlier. (The
    # other way, the emulator's write stamps can follow the client's reads on a loaded machine:
    # a reader woken by the write may run before write() returns.)
    assert record.t_send_ns <= t["received_ns"]
    assert record.output_tokens == t["output_tokens"]
    assert record.output_events == len(t["sent_ns"])


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_openai_stream_same_text_and_truth(emu, package):
    plain = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=SYNC_CLIENTS[package]())
    timed = openai.OpenAI(
        base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument(SYNC_CLIENTS[package]())
    )
    _openai_text(timed)  # warm-up: the SDK's first stream imports and builds its models
    emu.truth(clear=True)
    expected = [_openai_text(plain) for _ in range(3)]
    got = [_openai_text(timed) for _ in range(3)]
    assert got == expected and expected[0]
    truth = _truth_by_id(emu, 6)
    records = timed._client.collector.records[1:]
    assert len(records) == 3
    for r in records:
        assert r.ok and r.streamed and r.dialect == "openai-chat" and r.attempt == 1
        assert r.text if hasattr(r, "text") else True
        assert r.request.text == expected[0]
        _check_against_truth(r, truth)
        assert r.model == truth[r.response_id].get("model", r.model)
        assert r.token_source == "events"
        assert len(r.itl_s) == r.output_tokens - 1


def test_openai_usage_tokens_and_non_streaming(emu):
    client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument())
    stream = client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, max_tokens=10, stream_options={"include_usage": True}
    )
    list(stream)
    reply = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)
    assert reply.choices[0].message.content
    streamed, whole = client._client.collector.records
    assert streamed.token_source == "usage" and streamed.output_tokens == 10 == streamed.usage["completion_tokens"]
    # A non-streaming call: time to first byte and E2E, no per-token figures.
    assert not whole.streamed and whole.ok
    assert whole.ttfb_s is not None and whole.e2e_s is not None and whole.ttfb_s <= whole.e2e_s
    assert whole.ttft_s is None and whole.e2e_s > 0.005


def test_anthropic_stream_httpx2(emu):
    plain = anthropic.Anthropic(base_url=emu.base_url, api_key="k", http_client=httpx2.Client())
    timed = anthropic.Anthropic(base_url=emu.base_url, api_key="k", http_client=pytps.instrument(httpx2.Client()))

    def text(client):
        with client.messages.stream(model="m", max_tokens=16, messages=MESSAGES) as s:
            return "".join(s.text_stream)

    text(timed)  # warm-up
    emu.truth(clear=True)
    assert text(timed) == text(plain)
    truth = _truth_by_id(emu, 2)
    record = timed._client.collector.records[-1]
    assert record.dialect == "anthropic" and record.ok and record.finish_reason
    _check_against_truth(record, truth)
    assert record.usage["completion_tokens"] == 16 and record.token_source == "usage"


def test_anthropic_refuses_httpx_either_way(emu):
    # The SDK takes httpx2 clients only: instrumenting does not change what it refuses.
    with pytest.raises(TypeError):
        anthropic.Anthropic(base_url=emu.base_url, api_key="k", http_client=httpx.Client())
    with pytest.raises(TypeError):
        anthropic.Anthropic(base_url=emu.base_url, api_key="k", http_client=pytps.instrument(httpx.Client()))


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_tags_across_32_concurrent_async_calls(emu, package):
    collector = pytps.Collector()

    async def main():
        client = openai.AsyncOpenAI(
            base_url=emu.base_url + "/v1",
            api_key="k",
            http_client=pytps.instrument(ASYNC_CLIENTS[package](), collector=collector),
        )

        async def one(i: int) -> str:
            with pytps.tag(f"agent-{i % 4}"):
                stream = await client.chat.completions.create(
                    model="m", messages=MESSAGES, stream=True, max_tokens=8 + i, extra_headers={"x-n": str(i)}
                )
                return "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])

        await one(0)  # warm-up
        collector.clear()
        texts = await asyncio.gather(*(one(i) for i in range(32)))
        await client.close()
        return texts

    texts = asyncio.run(main())
    assert all(texts)
    records = collector.records
    assert len(records) == 32 and all(r.ok for r in records)
    # Each call asked for 8 + i tokens: the record's tag must be the one that call was made under.
    for r in records:
        assert r.tag == f"agent-{(r.output_tokens - 8) % 4}"
    assert sorted(r.output_tokens for r in records) == list(range(8, 40))
    assert len({r.call_id for r in records}) == 32
    per_tag = collector.summaries()
    assert set(per_tag) == {f"agent-{k}" for k in range(4)}
    assert all(s["requests_total"] == 8 for s in per_tag.values())
    assert collector.summary()["requests_total"] == 32


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_429_recorded_and_raised_as_before(package):
    with pytps.Emulator(ttft_ms=1, itl_us=100, faults=[{"kind": "http_429", "every": 1}]) as emu:
        errors = []
        for http_client in (SYNC_CLIENTS[package](), pytps.instrument(SYNC_CLIENTS[package]())):
            client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=http_client, max_retries=0)
            with pytest.raises(openai.RateLimitError) as caught:
                _openai_text(client)
            errors.append((type(caught.value), caught.value.status_code, str(caught.value)))
        assert errors[0] == errors[1]
        (record,) = http_client.collector.records
        assert record.error == "http_429" and record.status == 429 and not record.ok
        assert "rate" in record.error_detail.lower()


def test_sdk_retries_share_a_call_id():
    # Request 2 is a 429; the SDK retries it (after Retry-After) and the retry succeeds.
    faults = [{"kind": "http_429", "every": 2, "retry_after_s": 1}]
    with pytps.Emulator(ttft_ms=1, itl_us=100, faults=faults) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument())
        first = _openai_text(client)
        second = _openai_text(client)
    assert first == second
    a, b1, b2 = client._client.collector.records
    assert (a.attempt, b1.attempt, b2.attempt) == (1, 1, 2)
    assert b1.call_id == b2.call_id != a.call_id
    assert b1.error == "http_429" and b2.ok


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_stream_cut_midway_recorded_and_raised_as_before(package):
    with pytps.Emulator(ttft_ms=1, itl_us=200, faults=[{"kind": "disconnect", "every": 1, "after_events": 5}]) as emu:
        seen = []
        for http_client in (SYNC_CLIENTS[package](), pytps.instrument(SYNC_CLIENTS[package]())):
            client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k", http_client=http_client, max_retries=0)
            chunks = []
            with pytest.raises(Exception) as caught:
                stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True, max_tokens=20)
                for ch in stream:
                    chunks.append(ch.choices[0].delta.content if ch.choices else None)
            seen.append((type(caught.value), str(caught.value), chunks))
        assert seen[0] == seen[1]
        (record,) = http_client.collector.records
        assert record.error == "truncated" and record.output_events == 5
        # The SDK wraps the client's error (APIConnectionError); the record names the client's.
        cause = caught.value.__cause__ or caught.value
        assert record.error_detail.startswith(type(cause).__name__)


def test_async_anthropic_with_collector(emu):
    collector = pytps.Collector()

    async def main():
        client = anthropic.AsyncAnthropic(
            base_url=emu.base_url, api_key="k", http_client=pytps.instrument(httpx2.AsyncClient(), collector=collector)
        )
        texts = []
        for _ in range(2):  # the first: warm-up (the SDK's streaming code is imported on first use)
            async with client.messages.stream(model="m", max_tokens=12, messages=MESSAGES) as s:
                texts.append("".join([t async for t in s.text_stream]))
        await client.close()
        return texts

    emu.truth(clear=True)
    texts = asyncio.run(main())
    assert texts[0] == texts[1] and texts[0]
    truth = _truth_by_id(emu, 2)
    assert len(collector.records) == 2
    record = collector.records[1]
    assert record.ok and record.output_tokens == 12
    _check_against_truth(record, truth)


def test_every_path_of_the_cores_table_tells_its_dialect():
    from pytps.embed.instrument import dialect_for_path

    for dialect, paths in pytps._core.DIALECT_PATHS.items():
        for path in paths:
            assert dialect_for_path(path) == dialect
            assert dialect_for_path(f"/gateway{path}/") == dialect  # behind a prefix, with a trailing slash
            if path.startswith("/v1/"):  # the version sits in the SDK's base URL: Azure's deployments have none
                assert dialect_for_path("/openai/deployments/d" + path.removeprefix("/v1")) == dialect
    assert dialect_for_path("/v1/models") is None and dialect_for_path("/api/tags") is None


def test_instrument_rejects_what_it_cannot_time():
    with pytest.raises(pytps.ConfigError, match="httpx or httpx2"):
        pytps.instrument(object())
    with pytest.raises(pytps.ConfigError, match="unknown dialect"):
        pytps.instrument(httpx.Client(), dialect="nope")
    client = pytps.instrument(httpx.Client())
    with pytest.raises(pytps.ConfigError, match="instrumented already"):
        pytps.instrument(client)


def test_default_client_is_httpx2_sync():
    client = pytps.instrument()
    assert isinstance(client, httpx2.Client)
    assert isinstance(client.collector, pytps.Collector)


def _sync_openai_calls(emu, package: str, n: int):
    client = openai.OpenAI(
        base_url=emu.base_url + "/v1", api_key="k", http_client=pytps.instrument(SYNC_CLIENTS[package]())
    )
    _openai_text(client)  # warm-up
    emu.truth(clear=True)
    took = []
    for _ in range(n):
        took.append(CallTook())
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True, max_tokens=24)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content and not took[-1].seen:
                took[-1].first_token()
    return client._client.collector.records[1:], _truth_by_id(emu, n), took


def _async_anthropic_calls(emu, n: int):
    collector = pytps.Collector()
    took = []

    async def main():
        client = anthropic.AsyncAnthropic(
            base_url=emu.base_url, api_key="k", http_client=pytps.instrument(httpx2.AsyncClient(), collector=collector)
        )
        for i in range(n + 1):
            if i == 1:
                emu.truth(clear=True)
            took.append(CallTook())
            async with client.messages.stream(model="m", max_tokens=16, messages=MESSAGES) as s:
                async for _ in s.text_stream:
                    if not took[-1].seen:
                        took[-1].first_token()
        await client.close()

    asyncio.run(main())
    return collector.records[1:], _truth_by_id(emu, n), took[1:]


def _ttft_error_s(record, truth) -> float:
    t = truth[record.response_id]
    received = t["received_kernel_ns"] if t["received_kernel_ns"] is not None else t["received_ns"]
    return record.ttft_s - (int(t["sent_ns"][0]) - received) / 1e9


TIMING_TRIES = 3


@pytest.mark.timing
@pytest.mark.parametrize("case", ["openai-httpx", "openai-httpx2", "anthropic-async-httpx2"])
def test_ttft_within_half_a_millisecond_of_truth(emu, case):
    # The limit holds for every call, except a call whose excess over it the machine itself
    # explains: its thread waited at least that long for a CPU between the send and the first
    # token, or the hypervisor stole CPU meanwhile (the quiet-machine check, per call: a machine
    # quiet before the test can still be busy during one call). Such a try is measured again; an
    # excess nothing explains fails at once, and three disturbed tries skip, saying so.
    disturbed = []
    for _ in range(TIMING_TRIES):
        records, truth, took = (
            _async_anthropic_calls(emu, 10) if case.startswith("anthropic") else _sync_openai_calls(emu, case[7:], 10)
        )
        assert len(records) == 10 == len(took)
        excused = []
        for record, machine in zip(records, took, strict=True):
            excess_s = abs(_ttft_error_s(record, truth)) - TTFT_TOLERANCE_S
            if excess_s >= 0 and machine.explains(excess_s):
                excused.append(f"{excess_s * 1e3:+.2f} ms over, {machine.run_delay_ns / 1e6:.2f} ms waiting for a CPU")
                _check_against_truth(record, truth)
            else:
                truth_ms = (record.ttft_s - _ttft_error_s(record, truth)) * 1e3
                assert excess_s < 0, (
                    f"TTFT {record.ttft_s * 1e3:.3f} ms, truth {truth_ms:.3f} ms:"
                    f" {excess_s * 1e3:.3f} ms over the limit, of which the machine explains"
                    f" {machine.run_delay_ns / 1e6:.3f} ms waiting for a CPU (stolen: {machine.stolen})"
                )
                _check_against_truth(record, truth)
        if not excused:
            return
        disturbed.append("; ".join(excused))
    pytest.skip(f"the machine took the CPU from the client during a call in each of {TIMING_TRIES} tries: {disturbed}")


def test_async_retries_keep_their_call_and_tag_under_concurrency():
    faults = [{"kind": "http_429", "every": 2, "retry_after_s": 1}]
    collector = pytps.Collector()
    with pytps.Emulator(ttft_ms=1, itl_us=100, faults=faults) as emu:

        async def main():
            client = openai.AsyncOpenAI(
                base_url=emu.base_url + "/v1",
                api_key="k",
                http_client=pytps.instrument(httpx.AsyncClient(), collector=collector),
            )

            async def one(i: int):
                with pytps.tag(f"t{i}"):
                    stream = await client.chat.completions.create(
                        model="m", messages=MESSAGES, stream=True, max_tokens=5
                    )
                    return [c async for c in stream]

            await asyncio.gather(*(one(i) for i in range(4)))
            await client.close()

        asyncio.run(main())
    calls: dict[int, list] = {}
    for r in collector.records:
        calls.setdefault(r.call_id, []).append(r)
    assert len(calls) == 4  # every SDK call, however many attempts it took
    for attempts in calls.values():
        assert [r.attempt for r in attempts] == list(range(1, len(attempts) + 1))
        assert len({r.tag for r in attempts}) == 1  # the retries carry their call's tag
        assert attempts[-1].ok and all(r.error == "http_429" for r in attempts[:-1])
    assert sum(len(a) for a in calls.values()) > 4  # some calls were retried
