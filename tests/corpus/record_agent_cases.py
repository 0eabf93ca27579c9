"""Records the agent-model corpus cases (agent_parallel_calls.txt in openai-chat, openai-responses
and anthropic) from the emulator, with their expected read-outs and the recorder fuzz seeds.

Run from the repository root: ``python tests/corpus/record_agent_cases.py``. The expected tool
calls are checked against the emulator's truth (ids, names, arguments) before anything is
written, so the files say what the emulator sent, not what the recorder happened to read.
Three parallel calls whose pieces straddle events (3 tokens an event), so one chat chunk
carries the end of one call and the start of the next.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

import pytps  # noqa: E402
from recorder_framing import frame_events  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "line": {"type": "integer"}, "mode": {"enum": ["fast", "sûr"]}},
    "required": ["path"],
}
ROUTES = {
    "openai-chat": ("/v1/chat/completions", {"tools": [{"type": "function", "function": {"name": "open", "parameters": SCHEMA}}]}),
    "openai-responses": ("/v1/responses", {"tools": [{"type": "function", "name": "open", "parameters": SCHEMA}]}),
    "anthropic": ("/v1/messages", {"max_tokens": 18, "tools": [{"name": "open", "input_schema": SCHEMA}]}),
}
DIALECT_BYTE = {"openai-chat": 0, "openai-responses": 2, "anthropic": 3}
KINDS = {0: "content", 1: "reasoning", 2: "tool"}


def main() -> None:
    settings = dict(ttft_ms=1.0, itl_us=50.0, agent_turns=1, agent_calls=3, agent_invalid=0.34, tokens_per_event=3)
    with pytps.Emulator(seed=11, default_output_tokens=18, **settings) as emu:  # type: ignore[arg-type]
        for dialect, (path, extra) in ROUTES.items():
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "open it"}], **extra}
            if dialect == "openai-responses":
                body["input"] = body.pop("messages")
            if dialect == "openai-chat":
                body["stream_options"] = {"include_usage": True}
            raw = httpx.post(emu.base_url + path, json=body).content
            truth = emu.wait_truth(1, 5.0)
            emu.truth(clear=True)
            sent = truth[0]["tool_calls"]
            framed, _ = frame_events(raw, dialect)
            bounds = [end + 1 for end, _data in framed]  # end: the offset of the byte that completes it
            bounds[-1] = len(raw)  # the last event's blank line completes it
            rec = pytps.StreamRecorder(dialect)
            start = 0
            for k, end in enumerate(bounds):
                rec.feed(raw[start:end], 1000 * (k + 1))
                start = end
            rec.close(1000 * (len(bounds) + 1))
            calls = rec.tool_calls
            assert [(c["id"], c["name"]) for c in calls] == [(c["id"], c["name"]) for c in sent], (calls, sent)
            assert [json.loads(c["arguments"]) for c in calls] == [json.loads(c["arguments"]) for c in sent]
            expected = {
                "source": "pytps emulator, agent model (agent_turns=1, agent_calls=3, agent_invalid=0.34, "
                "tokens_per_event=3, seed=11): tests/corpus/record_agent_cases.py, tool calls checked against its truth",
                "notes": "three parallel calls; events straddle calls; a non-ASCII enum value",
                "events": len(framed),
                "output_events": rec.output_events,
                "output_event_indices": [t // 1000 - 1 for t in rec.output_times_ns.tolist()],
                "kinds": [KINDS[k] for k in rec.output_kinds.tolist()],
                "chars": rec.output_chars.tolist(),
                "output_tokens": rec.output_tokens.tolist(),
                "text": rec.text,
                "reasoning_text": rec.reasoning_text,
                "tool_calls": calls,
                "usage": rec.usage,
                "finish_reason": rec.finish_reason,
                "response_id": rec.response_id,
                "model": rec.model,
                "done": rec.done,
                "terminal_event_index": rec.end_ns // 1000 - 1 if rec.done else None,
                "error": None,
                "protocol_errors": rec.protocol_errors,
            }
            stem = HERE / dialect / "agent_parallel_calls"
            stem.with_suffix(".txt").write_bytes(raw)
            stem.with_suffix(".expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=2) + "\n")
            seed = bytes([DIALECT_BYTE[dialect], 0x10, 0x00]) + raw
            (HERE.parent / "fuzz" / "corpus" / "recorder" / f"{dialect}-agent_parallel_calls").write_bytes(seed)
            print(dialect, len(raw), "bytes,", len(calls), "calls")


if __name__ == "__main__":
    main()
