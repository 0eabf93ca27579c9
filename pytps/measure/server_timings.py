"""The server's own account of a request's time, read from what it already sends, set beside pytps's.

The stream recorder (C++) keeps the raw JSON object of the last timing report a stream carried,
and who defines its fields (``StreamRecorder.server_timings``: llama.cpp's ``timings``, Ollama's
final durations and counts, Groq's ``x_groq``, Cerebras's ``time_info``). Here, once per request,
it is put under common names (docs/metrics.md, "Server-reported timings"; each server's own
definitions: docs/real-servers.md). Not on the per-token path: one ``json.loads`` per request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytps.measure import fast_json

#: The keys of every request's ``server_timings`` in the journal (None where the server does not
#: report the figure), besides ``fields``, the report as the server sent it.
KEYS = (
    "source",
    "prompt_tokens",
    "cached_tokens",
    "prompt_s",
    "decode_tokens",
    "decode_s",
    "tpot_s",
    "queue_s",
    "load_s",
    "total_s",
    "ttft_minus_prompt_s",
    "tpot_minus_server_s",
)


def _num(fields: Mapping[str, Any], key: str, per_second: float = 1.0) -> float | None:
    value = fields.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) / per_second


def _int(fields: Mapping[str, Any], key: str) -> int | None:
    value = fields.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _per_token(seconds: float | None, steps: int | None) -> float | None:
    return seconds / steps if seconds is not None and steps is not None and steps > 0 else None


def _llama_cpp(f: Mapping[str, Any], usage: Mapping[str, int]) -> dict[str, Any]:
    # llama.cpp (tools/server, server_slot_stats): prompt_ms runs from the start of prompt
    # processing to its end (the first token's logits); predicted_ms from there to the last
    # token; the first token is free, so the time per token is over predicted_n - 1 steps.
    n = _int(f, "predicted_n")
    decode_s = _num(f, "predicted_ms", 1e3)
    return {
        "prompt_tokens": _int(f, "prompt_n"),
        "cached_tokens": _int(f, "cache_n"),
        "prompt_s": _num(f, "prompt_ms", 1e3),
        "decode_tokens": n,
        "decode_s": decode_s,
        "tpot_s": _per_token(decode_s, n - 1 if n is not None else None),
    }


def _ollama(f: Mapping[str, Any], usage: Mapping[str, int]) -> dict[str, Any]:
    # Ollama (api/types.go, Metrics): durations in ns; its rate is eval_count / eval_duration,
    # so its time per token is over eval_count tokens.
    n = _int(f, "eval_count")
    decode_s = _num(f, "eval_duration", 1e9)
    return {
        "prompt_tokens": _int(f, "prompt_eval_count"),
        "prompt_s": _num(f, "prompt_eval_duration", 1e9),
        "decode_tokens": n,
        "decode_s": decode_s,
        "tpot_s": _per_token(decode_s, n),
        "load_s": _num(f, "load_duration", 1e9),
        "total_s": _num(f, "total_duration", 1e9),
    }


def _queue_prompt_completion(f: Mapping[str, Any], tokens: int | None, prompt: int | None) -> dict[str, Any]:
    # Groq's and Cerebras's reports share names, in seconds: queue_time, prompt_time,
    # completion_time, total_time; their rate is completion_tokens / completion_time.
    decode_s = _num(f, "completion_time")
    return {
        "prompt_tokens": prompt,
        "prompt_s": _num(f, "prompt_time"),
        "decode_tokens": tokens,
        "decode_s": decode_s,
        "tpot_s": _per_token(decode_s, tokens),
        "queue_s": _num(f, "queue_time"),
        "total_s": _num(f, "total_time"),
    }


def _groq(f: Mapping[str, Any], usage: Mapping[str, int]) -> dict[str, Any]:
    # x_groq: {"id": ..., "usage": {queue_time, prompt_time, completion_time, total_time,
    # prompt_tokens, completion_tokens, ...}}: the times are in its usage.
    inner = f.get("usage")
    u: Mapping[str, Any] = inner if isinstance(inner, dict) else {}
    tokens = _int(u, "completion_tokens")
    prompt = _int(u, "prompt_tokens")
    return _queue_prompt_completion(
        u,
        tokens if tokens is not None else usage.get("completion_tokens"),
        prompt if prompt is not None else usage.get("prompt_tokens"),
    )


def _cerebras(f: Mapping[str, Any], usage: Mapping[str, int]) -> dict[str, Any]:
    # time_info: {queue_time, prompt_time, completion_time, total_time, created}; the counts
    # are in the chunk's usage.
    return _queue_prompt_completion(f, usage.get("completion_tokens"), usage.get("prompt_tokens"))


_READERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, int]], dict[str, Any]]] = {
    "llama.cpp": _llama_cpp,
    "ollama": _ollama,
    "groq": _groq,
    "cerebras": _cerebras,
}

_EMPTY: dict[str, Any] = dict.fromkeys(KEYS)

#: Every source the recorder can name.
SOURCES = tuple(_READERS)


def read(
    report: tuple[str, str] | None,
    usage: Mapping[str, int],
    ttft_s: float | None,
    tpot_s: float | None,
) -> dict[str, Any] | None:
    """A request's ``server_timings`` (keys: KEYS and ``fields``) from the recorder's report and
    pytps's own TTFT and TPOT of it; None when the server reported nothing readable."""
    if report is None:
        return None
    source, raw = report
    try:
        fields = fast_json.loads(raw)
    except ValueError:
        return None
    reader = _READERS.get(source)
    if reader is None or not isinstance(fields, dict):
        return None
    figures = reader(fields, usage)
    for value in figures.values():
        if value is not None:
            break
    else:  # a loop, not any() over a generator: ~0.25 us of every request (issue 42)
        return None  # a report without figures (Groq's first chunk: x_groq holds only an id)
    out: dict[str, Any] = _EMPTY.copy()  # KEYS in order, each None
    out.update(figures)
    out["source"] = source
    prompt_s, server_tpot = out["prompt_s"], out["tpot_s"]
    # Client TTFT minus the server's prompt time: network, queueing, HTTP and the client.
    out["ttft_minus_prompt_s"] = ttft_s - prompt_s if ttft_s is not None and prompt_s is not None else None
    out["tpot_minus_server_s"] = tpot_s - server_tpot if tpot_s is not None and server_tpot is not None else None
    out["fields"] = fields
    return out


#: The summary's distributions of them (results.json ``summary.server_timings``).
SUMMARY_STATS = ("prompt_s", "decode_s", "tpot_s", "ttft_minus_prompt_s", "tpot_minus_server_s")
