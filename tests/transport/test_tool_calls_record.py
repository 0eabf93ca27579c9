"""RequestRecord.tool_calls on every transport, streamed (the C++ dialects) and whole (the body
reader): the agent emulator's parallel calls come back with the ids, names and arguments its
truth says it sent."""

from __future__ import annotations

import asyncio
import json

import pytest

import pytps
from pytps.measure.bodies import read_body
from pytps.transport.asyncio_transport import AsyncioTransport
from pytps.transport.base import RequestSpec
from pytps.transport.httpx_transport import HttpxTransport
from pytps.transport.native_transport import NativeTransport

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]}
APIS = {
    "chat": ("/v1/chat/completions", "openai-chat", {"messages": [{"role": "user", "content": "go"}],
                                                      "tools": [{"type": "function", "function": {"name": "search", "parameters": SCHEMA}}]}),
    "responses": ("/v1/responses", "openai-responses", {"input": "go", "tools": [{"type": "function", "name": "search", "parameters": SCHEMA}]}),
    "messages": ("/v1/messages", "anthropic", {"max_tokens": 40, "messages": [{"role": "user", "content": "go"}],
                                               "tools": [{"name": "search", "input_schema": SCHEMA}]}),
}
TRANSPORTS = {"native": NativeTransport, "asyncio": AsyncioTransport, "httpx": HttpxTransport}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("api", sorted(APIS))
@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_tool_calls_reach_the_record(transport: str, api: str, stream: bool) -> None:
    path, dialect, body = APIS[api]
    with pytps.Emulator(ttft_ms=1.0, itl_us=50.0, agent_turns=1, agent_calls=3, agent_invalid=0.5, seed=5) as emu:
        spec = RequestSpec(
            index=0,
            path=path,
            body=json.dumps({"model": "m", "stream": stream, **body}).encode(),
            headers={"content-type": "application/json"},
            dialect=dialect if stream else "json",
            stream=stream,
        )

        async def send() -> pytps.RequestRecord:
            t = TRANSPORTS[transport](emu.base_url)
            try:
                return await t.send(spec)
            finally:
                await t.aclose()

        rec = asyncio.run(send())
        read_body(rec, dialect)
        sent = emu.wait_truth(1)[0]["tool_calls"]
    assert rec.error is None, rec.error_detail
    assert len(sent) == 3
    assert [(c.id, c.name) for c in rec.tool_calls] == [(c["id"], c["name"]) for c in sent]
    assert [json.loads(c.arguments) for c in rec.tool_calls] == [json.loads(c["arguments"]) for c in sent]
    if stream or api != "messages":  # a whole Anthropic body's input is re-serialized JSON
        assert [c.arguments for c in rec.tool_calls] == [c["arguments"] for c in sent]
    assert sorted(c.index for c in rec.tool_calls) == [c.index for c in rec.tool_calls]
