"""What a whole JSON response body says, per API: embeddings, rerank and non-streamed generation.

A transport reads such a body with the "json" dialect: the native core stamps its first byte (the
headers' read) and its end, and keeps the bytes (RequestRecord.body). read_body() then parses them
once, off the timed path, and fills the record as the StreamRecorder fills a stream's: usage, text,
finish reason, and for embeddings and rerank what the answer holds (docs/metrics.md, "Embeddings
and rerank"). A 2xx body that does not say what was asked is error class protocol:

- embeddings: not exactly one vector per input, vectors of different lengths (or none), a NaN or an
  infinity in one, or another length than `dimensions` asked for;
- rerank: more results than documents or than top_n asked, an index outside the documents, or
  an index ranked twice (the Cohere / Jina / vLLM object with "results", or TEI's bare list);
- generation: not a JSON object of the API's shape.
"""

from __future__ import annotations

import array
import base64
import json
import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from pytps._native import _core
from pytps.measure import fast_json
from pytps.measure.records import ERROR_PROTOCOL, RequestRecord, ToolCall
from pytps.measure.usage import implausible_counts

__all__ = ["read_body", "usage_of"]

_PROMPT = ("prompt_tokens", "input_tokens", "prompt_eval_count")
_COMPLETION = ("completion_tokens", "output_tokens", "eval_count")


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping) without the ABC's __instancecheck__ for a dict or None (what a
    JSON body's values mostly are): 0.14 -> 0.06 us each, seven an embeddings request (issue 42)."""
    if type(value) is dict:
        return True
    return value is not None and isinstance(value, Mapping)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_of(obj: Mapping[str, Any]) -> dict[str, int]:
    """A body's token counts under pytps's names, from any of the APIs' namings (the same mapping
    as the core's read_usage for streams): OpenAI `usage`, Anthropic/Responses `usage`
    (input/output), Ollama's top-level prompt_eval_count/eval_count, rerank's usage.total_tokens
    (taken as the prompt, since a reranker generates nothing) and Cohere's meta.billed_units."""
    usage = obj.get("usage")
    src: Mapping[str, Any] = usage if _mapping(usage) else obj
    out: dict[str, int] = {}
    for names, key in (
        (_PROMPT, "prompt_tokens"),
        (_COMPLETION, "completion_tokens"),
        (("total_tokens",), "total_tokens"),
    ):
        for name in names:
            v = _int(src.get(name))
            if v is not None:
                out[key] = v
                break
    for details, field, key in (
        ("prompt_tokens_details", "cached_tokens", "cached_tokens"),
        ("input_tokens_details", "cached_tokens", "cached_tokens"),
        ("completion_tokens_details", "reasoning_tokens", "reasoning_tokens"),
        ("output_tokens_details", "reasoning_tokens", "reasoning_tokens"),
    ):
        d = src.get(details)
        if _mapping(d) and _int(d.get(field)) is not None:
            out[key] = d[field]
    if _int(src.get("cache_read_input_tokens")) is not None:
        out["cached_tokens"] = src["cache_read_input_tokens"]
    meta = obj.get("meta")
    if "prompt_tokens" not in out and _mapping(meta):  # Cohere's rerank
        billed = meta.get("billed_units")
        if _mapping(billed) and _int(billed.get("input_tokens")) is not None:
            out["prompt_tokens"] = billed["input_tokens"]
    if "prompt_tokens" not in out and "completion_tokens" not in out and "total_tokens" in out:
        out["prompt_tokens"] = out["total_tokens"]  # embeddings / rerank servers that give only the total
    return out


def _fail(rec: RequestRecord, detail: str) -> None:
    rec.error, rec.error_detail = ERROR_PROTOCOL, detail
    rec.done = False


_float_vector_length = _core.json_float_vector_length


def _vector_length(value: Any) -> int | None:
    """Components of one embedding: a list of numbers, or a base64 string of float32s; -1 when it
    holds a NaN or an infinity (JSON's NaN/Infinity, which Python's parser takes, or such floats)."""
    if isinstance(value, list):
        # The common case, a list of floats only, judged natively in one pass (a Python check of
        # the components' types was ~5% of an embeddings request's client CPU, issue 42); None
        # (empty, or not floats only): the checks below.
        length = _float_vector_length(value)
        if length is not None:
            return length
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return None
        return len(value) if all(math.isfinite(x) for x in value) else -1
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            return None
        if len(raw) % 4:
            return None
        floats = array.array("f")
        floats.frombytes(raw)
        return len(floats) if all(math.isfinite(x) for x in floats) else -1
    return None


_empty_float_vectors = _core.json_empty_float_vectors


def _loads(body: bytes, api: str) -> tuple[Any, dict[int, int]]:
    """fast_json.loads(body), and the lengths of the vectors counted instead of read: an OpenAI
    embeddings body's data[i].embedding arrays of finite floats come emptied, their component
    counts by i (_core.json_empty_float_vectors: a Python float per component was most of an
    embeddings request's client CPU, issue 42). Every other value is json.loads's; a body of
    another shape, or whose emptied text does not read, is read whole."""
    if api == "openai-embeddings":
        emptied = _empty_float_vectors(body)
        if emptied is not None:
            try:
                return fast_json.loads(emptied[0]), emptied[1]
            except ValueError:  # JSONDecodeError and UnicodeDecodeError: the whole body says which
                pass
    return fast_json.loads(body), {}


def _embeddings(rec: RequestRecord, obj: Mapping[str, Any], api: str, counted: Mapping[int, int]) -> str | None:
    """The embeddings' verdict; counted: the components of vectors _loads counted instead of read."""
    if api == "ollama-embed":
        vectors = obj.get("embeddings")
        if not isinstance(vectors, list):
            return 'the body has no "embeddings" list'
    else:
        data = obj.get("data")
        if not isinstance(data, list):
            return 'the body has no "data" list'
        if not all(map(_mapping, data)):
            return 'an element of "data" is not an object'
        indexes = [d.get("index", i) for i, d in enumerate(data)]
        if sorted(indexes) != list(range(len(data))):
            return f"the embeddings' indexes are not 0..{len(data) - 1} once each"
        vectors = [d.get("embedding") for d in data]
    expected = rec.inputs or 0
    if len(vectors) != expected:
        return f"{len(vectors)} embeddings for {expected} inputs"
    lengths = {counted[i] if i in counted else _vector_length(v) for i, v in enumerate(vectors)}
    if None in lengths or 0 in lengths:
        return "an embedding is not a non-empty list of numbers (or base64 float32s)"
    if -1 in lengths:
        return "an embedding holds NaN or an infinity"
    if len(lengths) != 1:
        return f"embeddings of different lengths: {sorted(n for n in lengths if n is not None)}"
    dim = lengths.pop()
    if rec.dimensions is not None and dim != rec.dimensions:
        return f"embeddings of {dim} components where --dimensions asked for {rec.dimensions}"
    rec.embedding_dim = dim
    rec.results = len(vectors)
    return None


def _rerank(rec: RequestRecord, obj: Mapping[str, Any]) -> str | None:
    results = obj.get("results", obj.get("data"))  # Cohere/Jina/vLLM "results"; some proxies "data"
    if not isinstance(results, list) or not all(map(_mapping, results)):
        return 'the body has no "results" list of objects'
    documents = rec.inputs or 0
    wanted = min(documents, rec.top_n) if rec.top_n is not None else documents
    indexes = [_int(r.get("index")) for r in results]
    if any(i is None or not 0 <= i < documents for i in indexes):
        return f"a result's index is not one of the {documents} documents (0..{documents - 1})"
    if len(set(indexes)) != len(indexes):
        return "a document is ranked more than once"
    if len(results) != wanted:
        return f"{len(results)} results where {wanted} were asked for (top_n {rec.top_n}, {documents} documents)"
    rec.results = len(results)
    return None


def _tool_calls(obj: Mapping[str, Any], api: str) -> list[ToolCall]:
    """The tool calls of a whole generation body: chat ``message.tool_calls``, Responses
    ``function_call`` output items, Anthropic ``tool_use`` blocks (Ollama: ``message.tool_calls``,
    whose arguments are an object)."""
    calls: list[ToolCall] = []
    if api == "openai-responses":
        items = [i for i in obj.get("output") or [] if _mapping(i) and i.get("type") == "function_call"]
        for n, item in enumerate(items):
            calls.append(
                ToolCall(n, _str(item.get("call_id")) or None, _str(item.get("name")), _str(item.get("arguments")))
            )
    elif api == "anthropic":
        blocks = [b for b in obj.get("content") or [] if _mapping(b) and b.get("type") == "tool_use"]
        for n, block in enumerate(blocks):
            calls.append(
                ToolCall(n, _str(block.get("id")) or None, _str(block.get("name")), json.dumps(block.get("input")))
            )
    else:
        choices = obj.get("choices")
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and _mapping(choices[0])
            else obj.get("message")
        )
        entries = message.get("tool_calls") if _mapping(message) else None
        for n, entry in enumerate(entries if isinstance(entries, list) else []):
            if not _mapping(entry):
                continue
            inner = entry.get("function")
            fn: Mapping[str, Any] = inner if _mapping(inner) else {}
            args = fn.get("arguments")
            arguments = args if isinstance(args, str) else json.dumps(args) if args is not None else ""
            index = entry.get("index")
            calls.append(
                ToolCall(
                    index if isinstance(index, int) else n,
                    _str(entry.get("id")) or None,
                    _str(fn.get("name")),
                    arguments,
                )
            )
    return calls


def _generation(rec: RequestRecord, obj: Mapping[str, Any], api: str) -> str | None:
    text, reasoning, finish = "", "", None
    if api in ("openai-chat", "openai-completions"):
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not _mapping(choices[0]):
            return 'the body has no "choices"'
        choice = choices[0]
        message = choice.get("message")
        if _mapping(message):
            text = _str(message.get("content")) + _str(message.get("refusal"))
            reasoning = _str(message.get("reasoning_content")) or _str(message.get("reasoning"))
        else:
            text = _str(choice.get("text"))
        finish = choice.get("finish_reason")
    elif api == "openai-responses":
        for item in obj.get("output") or []:
            if _mapping(item):
                item_text, item_reasoning = _parts(
                    item.get("content"), ("output_text", "text"), ("reasoning_text", "text")
                )
                text, reasoning = text + item_text, reasoning + item_reasoning
        finish = obj.get("status")
    elif api == "anthropic":
        text, reasoning = _parts(obj.get("content"), ("text", "text"), ("thinking", "thinking"))
        finish = obj.get("stop_reason")
    else:  # ollama: /api/chat's message, /api/generate's response
        message = obj.get("message")
        text = _str(message.get("content")) if _mapping(message) else _str(obj.get("response"))
        reasoning = _str(message.get("thinking")) if _mapping(message) else _str(obj.get("thinking"))
        finish = obj.get("done_reason")
    for key, source in (("timings", "llama.cpp"), ("time_info", "cerebras"), ("x_groq", "groq")):
        if _mapping(obj.get(key)):  # the server's own timings, as a stream's last chunk has them
            rec.server_timings = (source, json.dumps(obj[key]))
    rec.text, rec.reasoning_text = text, reasoning
    rec.tool_calls = _tool_calls(obj, api)
    rec.text_chars = len(text) + len(reasoning)
    rec.finish_reason = finish if isinstance(finish, str) else None
    return None


def _parts(parts: Any, answer: tuple[str, str], thinking: tuple[str, str]) -> tuple[str, str]:
    """The answer's and the reasoning's text of a list of content parts (Responses' and
    Anthropic's), each given as (the part's type, the key of its text); other parts are skipped."""
    text, reasoning = "", ""
    for part in parts or []:
        if _mapping(part) and part.get("type") == answer[0]:
            text += _str(part.get(answer[1]))
        elif _mapping(part) and part.get("type") == thinking[0]:
            reasoning += _str(part.get(thinking[1]))
    return text, reasoning


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def read_body(rec: RequestRecord, api: str) -> None:
    """Fills rec from its whole JSON body (rec.body), then drops the bytes. Nothing is done for a
    request that already failed, or that was streamed."""
    body, rec.body = rec.body, b""
    if rec.stream or rec.error is not None:
        return
    try:
        obj, counted = _loads(body, api)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = " ".join(body[:80].decode("utf-8", "replace").split())
        _fail(rec, f"the response body is not JSON: {text!r}")
        return
    if api == "rerank" and isinstance(obj, list):
        obj = {"results": obj}  # TEI's own /rerank answers with the bare list of {index, score}
    if not _mapping(obj):
        _fail(rec, f"the response body is a JSON {type(obj).__name__}, not an object")
        return
    if isinstance(obj.get("id"), str):
        rec.response_id = obj["id"]
    if isinstance(obj.get("model"), str):
        rec.model = obj["model"]
    usage = usage_of(obj)
    # A whole body has no event count to bound completion tokens by: its bytes do (a token is at
    # least one byte of it), and max_tokens as for streams.
    bad = implausible_counts(usage, max(1, len(body)), rec.max_tokens, rec.request_bytes)
    rec.usage = {k: v for k, v in usage.items() if k not in bad}
    rec.usage_implausible = bad or None
    if api in ("openai-embeddings", "ollama-embed"):
        why = _embeddings(rec, obj, api, counted)
    elif api == "rerank":
        why = _rerank(rec, obj)
    else:
        why = _generation(rec, obj, api)
    if why is not None:
        _fail(rec, why)
