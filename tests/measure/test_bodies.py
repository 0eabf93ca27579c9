"""measure.bodies: whole JSON bodies read per API, on the emulator's shapes and on response bodies
shaped as the servers' documentation shows them; a body that does not answer what was asked is a
protocol error."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from pytps.measure.bodies import read_body, usage_of
from pytps.measure.records import RequestRecord


def _rec(body, *, inputs=None, top_n=None, max_tokens=None):
    rec = RequestRecord(index=0, stream=False, inputs=inputs, top_n=top_n, max_tokens=max_tokens, request_bytes=10_000)
    rec.body = body if isinstance(body, bytes) else json.dumps(body).encode()
    rec.done = True
    return rec


def _openai_embeddings(n, dim):
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": [0.1] * dim} for i in range(n)],
        "model": "m",
        "usage": {"prompt_tokens": 7 * n, "total_tokens": 7 * n},
    }


def test_openai_embeddings_body():
    rec = _rec(_openai_embeddings(3, 5), inputs=3)
    read_body(rec, "openai-embeddings")
    assert rec.error is None and rec.embedding_dim == 5 and rec.results == 3
    assert rec.usage["prompt_tokens"] == 21 and rec.body == b""


def test_base64_embeddings_count_float32s():
    vec = base64.b64encode(struct.pack("<6f", *range(6))).decode()
    body = {"data": [{"index": 0, "embedding": vec}], "usage": {"prompt_tokens": 2, "total_tokens": 2}}
    rec = _rec(body, inputs=1)
    read_body(rec, "openai-embeddings")
    assert rec.error is None and rec.embedding_dim == 6


def test_ollama_embed_body():
    body = {"model": "all-minilm", "embeddings": [[0.01, -0.02], [0.3, 0.4]], "total_duration": 14143917,
            "load_duration": 1019500, "prompt_eval_count": 8}  # fmt: skip
    rec = _rec(body, inputs=2)
    read_body(rec, "ollama-embed")
    assert rec.error is None and rec.embedding_dim == 2 and rec.usage == {"prompt_tokens": 8}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (_openai_embeddings(2, 4), "2 embeddings for 3 inputs"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}, {"index": 2, "embedding": [1.0]}]}, "different lengths"),
        ({"data": [{"index": 0, "embedding": []}] * 3}, "not 0..2 once each"),
        ({"data": [{"index": i, "embedding": "not base64!"} for i in range(3)]}, "not a non-empty list"),
        ({"object": "list"}, 'no "data" list'),
        (b"<html>", "not JSON"),
    ],
)
def test_wrong_embeddings_are_protocol_errors(body, why):
    rec = _rec(body, inputs=3)
    read_body(rec, "openai-embeddings")
    assert rec.error == "protocol" and why in rec.error_detail and not rec.done


# Rerank bodies shaped as each server documents its answer.
VLLM = {  # docs.vllm.ai, OpenAI-compatible server, "Re-rank API" example response
    "id": "rerank-fae51b2b664d4ed38f5969b612edff77",
    "model": "BAAI/bge-reranker-base",
    "usage": {"total_tokens": 56},
    "results": [
        {"index": 1, "document": {"text": "The capital of France is Paris."}, "relevance_score": 0.99853515625},
        {"index": 0, "document": {"text": "The capital of Brazil is Brasilia."}, "relevance_score": 0.0005860328674316406},
    ],
}
COHERE = {  # docs.cohere.com/reference/rerank (v2), example response
    "results": [{"index": 3, "relevance_score": 0.999071}, {"index": 4, "relevance_score": 0.7867867}],
    "id": "07734bd2-2473-4f07-94e1-0d9f0e6843cf",
    "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
}
JINA = {  # jina.ai/reranker API, example response
    "model": "jina-reranker-v2-base-multilingual",
    "usage": {"total_tokens": 815},
    "results": [
        {"index": 0, "document": {"text": "Organic skincare for sensitive skin"}, "relevance_score": 0.8783142566680908},
        {"index": 2, "document": {"text": "Natural organic skincare range"}, "relevance_score": 0.2},
    ],
}
TEI = [{"index": 1, "score": 0.9976404}, {"index": 0, "score": 0.12527926}]  # TEI README, POST /rerank


@pytest.mark.parametrize(
    ("body", "documents", "top_n", "tokens"),
    [(VLLM, 2, None, 56), (COHERE, 5, 2, None), (JINA, 3, 2, 815), (TEI, 2, None, None)],
)
def test_documented_rerank_bodies(body, documents, top_n, tokens):
    rec = _rec(body, inputs=documents, top_n=top_n)
    read_body(rec, "rerank")
    assert rec.error is None and rec.results == len(body if isinstance(body, list) else body["results"])
    assert rec.usage.get("prompt_tokens") == tokens


@pytest.mark.parametrize(
    ("results", "top_n", "why"),
    [
        ([{"index": 0}, {"index": 0}], None, "more than once"),
        ([{"index": 0}, {"index": 5}], None, "not one of the 2 documents"),
        ([{"index": 0}], None, "1 results where 2 were asked"),
        ([{"index": 0}, {"index": 1}], 1, "2 results where 1 were asked"),
        ([{"index": "0"}, {"index": 1}], None, "not one of"),
    ],
)
def test_wrong_rankings_are_protocol_errors(results, top_n, why):
    rec = _rec({"results": results}, inputs=2, top_n=top_n)
    read_body(rec, "rerank")
    assert rec.error == "protocol" and why in rec.error_detail


@pytest.mark.parametrize(
    ("api", "body", "text", "finish"),
    [
        ("openai-chat", {"choices": [{"message": {"content": "hi there"}, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}, "hi there", "stop"),
        ("openai-completions", {"choices": [{"text": "abc", "finish_reason": "length"}],
                                "usage": {"prompt_tokens": 5, "completion_tokens": 2}}, "abc", "length"),
        ("openai-responses", {"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": "yo"}]}],
                              "usage": {"input_tokens": 5, "output_tokens": 2}}, "yo", "completed"),
        ("anthropic", {"content": [{"type": "text", "text": "hey"}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 5, "output_tokens": 2}}, "hey", "end_turn"),
        ("ollama", {"message": {"role": "assistant", "content": "ok"}, "done": True, "done_reason": "stop",
                    "prompt_eval_count": 5, "eval_count": 2}, "ok", "stop"),
    ],
)  # fmt: skip
def test_non_streamed_generation(api, body, text, finish):
    rec = _rec(body, max_tokens=16)
    read_body(rec, api)
    assert rec.error is None and rec.text == text and rec.finish_reason == finish
    assert rec.usage["prompt_tokens"] == 5 and rec.usage["completion_tokens"] == 2


def test_an_implausible_count_is_set_aside():
    rec = _rec({"choices": [{"message": {"content": "x"}}], "usage": {"completion_tokens": 10**9}}, max_tokens=4)
    read_body(rec, "openai-chat")
    assert "completion_tokens" not in rec.usage and rec.usage_implausible == {"completion_tokens": 10**9}


def test_usage_namings():
    assert usage_of({"usage": {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 1}}}) == {
        "prompt_tokens": 3,
        "cached_tokens": 1,
    }
    assert usage_of({"prompt_eval_count": 4, "eval_count": 2}) == {"prompt_tokens": 4, "completion_tokens": 2}
