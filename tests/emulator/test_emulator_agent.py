"""The emulator playing an agent model (docs/emulator.md, "Agents"): K turns of tool calls fit to
the request's tools (parallel, some planted invalid), then a final answer, in each API's wire
format, streamed and whole; its truth records the turn, the tool results received by call id,
the calls sent and the cached tokens of the growing conversation. The streams are assembled by
the providers' own SDKs, so the wire format is checked by the clients people use."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import openai
import pytest

import pytps

SCHEMA_READ = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["path"],
}
SCHEMA_GREP = {
    "type": "object",
    "properties": {"pattern": {"type": "string"}, "mode": {"enum": ["fast", "slow"]}, "ci": {"type": "boolean"}},
    "required": ["pattern"],
}
SCHEMAS = {"read_file": SCHEMA_READ, "grep": SCHEMA_GREP}
CHAT_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in SCHEMAS.items()]
RESP_TOOLS = [{"type": "function", "name": n, "parameters": s} for n, s in SCHEMAS.items()]
ANTH_TOOLS = [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()]
TASK = "Find the failing test and fix it. " * 20


def _valid(name: str, arguments: str) -> bool:
    try:
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])
    except (jsonschema.ValidationError, json.JSONDecodeError):
        return False
    return True


def _emulator(**kw: object) -> pytps.Emulator:
    settings: dict[str, object] = dict(ttft_ms=1.0, itl_us=50.0, prefix_cache_tokens=1_000_000, seed=7)
    settings.update(kw)
    return pytps.Emulator(**settings)  # type: ignore[arg-type]


def _chat_loop(emu: pytps.Emulator, stream: bool) -> list[list[tuple[str, str, str]]]:
    client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x")
    messages: list[dict[str, object]] = [{"role": "user", "content": TASK}]
    turns = []
    for _ in range(10):
        if stream:
            with client.chat.completions.stream(model="m", messages=messages, tools=CHAT_TOOLS) as s:  # type: ignore[arg-type]
                for _event in s:
                    pass
                msg = s.get_final_completion().choices[0].message
        else:
            msg = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS).choices[0].message  # type: ignore[arg-type]
        calls = [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls or []]
        turns.append(calls)
        if not calls:
            assert msg.content
            break
        messages.append(msg.model_dump(exclude_none=True))
        for cid, _name, _args in calls:
            messages.append({"role": "tool", "tool_call_id": cid, "content": f"result of {cid}"})
    return turns


def _responses_loop(emu: pytps.Emulator, stream: bool) -> list[list[tuple[str, str, str]]]:
    client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x")
    items: list[dict[str, object]] = [{"role": "user", "content": TASK}]
    turns = []
    for _ in range(10):
        if stream:
            with client.responses.stream(model="m", input=items, tools=RESP_TOOLS) as s:  # type: ignore[arg-type]
                for _event in s:
                    pass
                resp = s.get_final_response()
        else:
            resp = client.responses.create(model="m", input=items, tools=RESP_TOOLS)  # type: ignore[arg-type]
        calls = [(o.call_id, o.name, o.arguments) for o in resp.output if o.type == "function_call"]
        turns.append(calls)
        if not calls:
            assert resp.output_text
            break
        for cid, name, args in calls:
            items.append({"type": "function_call", "call_id": cid, "name": name, "arguments": args})
        for cid, _name, _args in calls:
            items.append({"type": "function_call_output", "call_id": cid, "output": f"result of {cid}"})
    return turns


def _anthropic_loop(emu: pytps.Emulator, stream: bool) -> list[list[tuple[str, str, str]]]:
    client = anthropic.Anthropic(base_url=emu.base_url, api_key="x")
    messages: list[dict[str, object]] = [{"role": "user", "content": TASK}]
    turns = []
    for _ in range(10):
        kw = dict(model="m", max_tokens=64, messages=messages, tools=ANTH_TOOLS)
        if stream:
            with client.messages.stream(**kw) as s:  # type: ignore[arg-type]
                for _event in s:
                    pass
                msg = s.get_final_message()
        else:
            msg = client.messages.create(**kw)  # type: ignore[arg-type]
        uses = [b for b in msg.content if b.type == "tool_use"]
        # The SDK parses the streamed input_json_delta pieces; a planted non-object stays as sent.
        calls = [(b.id, b.name, json.dumps(b.input)) for b in uses]
        turns.append(calls)
        if not calls:
            assert any(b.type == "text" for b in msg.content)
            break
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": f"result of {b.id}"} for b in uses]}
        )
    return turns


LOOPS = {"chat": _chat_loop, "responses": _responses_loop, "messages": _anthropic_loop}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("api", sorted(LOOPS))
def test_agent_loop_on_every_api(api: str, stream: bool) -> None:
    with _emulator(agent_turns=3, agent_calls=2, agent_invalid=0.3) as emu:
        turns = LOOPS[api](emu, stream)
        truth = sorted(emu.wait_truth(len(turns)), key=lambda t: t["seq"])
    # K turns of N parallel calls, then the final answer.
    assert [len(t) for t in turns] == [2, 2, 2, 0]
    assert [t["turn"] for t in truth] == [0, 1, 2, 3]
    for got, rec in zip(turns, truth):
        assert [c[0] for c in got] == [c["id"] for c in rec["tool_calls"]]
        assert [c[1] for c in got] == [c["name"] for c in rec["tool_calls"]]
        assert all(name in SCHEMAS for name in (c[1] for c in got))
        # The truth's validity is the schema's verdict on what the client received.
        for (_cid, name, args), sent in zip(got, rec["tool_calls"]):
            assert _valid(name, args) == sent["valid"], (name, args)
            assert json.loads(args) == json.loads(sent["arguments"])
    # Every tool result reached the emulator with its call id, on the next turn.
    for before, after in zip(truth, truth[1:]):
        assert [r["id"] for r in after["tool_results"]] == [c["id"] for c in before["tool_calls"]]
        assert all(r["chars"] == len("result of " + r["id"]) for r in after["tool_results"])
    assert truth[0]["tool_results"] == []
    # The growing conversation is served from the prefix cache.
    assert truth[0]["cached_tokens"] == 0
    assert all(b["cached_tokens"] > a["cached_tokens"] for a, b in zip(truth, truth[1:]))
    assert all(t["cached_tokens"] < t["prompt_tokens"] for t in truth)


def test_planted_invalid_share_and_seed() -> None:
    def run(seed: int) -> list[bool]:
        with _emulator(agent_turns=1, agent_calls=8, agent_invalid=0.5, seed=seed) as emu:
            client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x")
            for i in range(10):
                messages = [{"role": "user", "content": f"task {i}"}]
                client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)  # type: ignore[arg-type]
            return [c["valid"] for t in sorted(emu.wait_truth(10), key=lambda t: t["seq"]) for c in t["tool_calls"]]

    a = run(3)
    assert len(a) == 80
    assert 20 <= a.count(False) <= 60
    assert run(3) == a  # seeded
    assert run(4) != a


def test_no_tools_is_no_agent_and_settings_are_checked() -> None:
    with _emulator(agent_turns=2) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x")
        msg = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]).choices[0].message
        assert msg.content and not msg.tool_calls
        assert emu.wait_truth(1)[0]["turn"] is None
    with pytest.raises(ValueError, match="agent_calls"):
        pytps.Emulator(agent_calls=0)
    with pytest.raises(ValueError, match="agent_invalid"):
        pytps.Emulator(agent_invalid=1.5)


def test_schema_less_tool_and_truth_log(tmp_path: object) -> None:
    import pathlib

    log = pathlib.Path(str(tmp_path)) / "truth.jsonl"
    tools = [{"type": "function", "function": {"name": "ping"}}]
    with _emulator(agent_turns=1, agent_calls=1, agent_invalid=1.0, truth_log=str(log)) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x")
        msg = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], tools=tools).choices[0].message  # type: ignore[arg-type]
        assert msg.tool_calls and msg.tool_calls[0].function.arguments == "[]"  # not an object: invalid
    line = json.loads(log.read_text().splitlines()[0])
    assert line["turn"] == 0 and line["tool_calls"][0]["valid"] is False and line["tool_results"] == []
