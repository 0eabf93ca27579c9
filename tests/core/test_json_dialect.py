"""The json dialect: a whole JSON body kept for Python, stamped at its end, with no events."""

from __future__ import annotations

import pytest

import pytps
from pytps._native import _core


def test_the_body_is_kept_whole_and_ends_at_close():
    rec = _core.StreamRecorder("json")
    assert rec.feed(b'{"data": [', 10) == 0
    assert rec.feed(b"1]}", 20) == 0
    rec.close(30)
    assert rec.body == b'{"data": [1]}' and rec.done and rec.end_ns == 30
    assert rec.first_output_ns is None and rec.events == 0 and rec.error is None


def test_an_empty_body_is_not_done():
    rec = _core.StreamRecorder("json")
    rec.close(5)
    assert not rec.done and rec.body == b""


def test_stream_dialects_keep_no_body():
    rec = _core.StreamRecorder("openai-chat")
    rec.feed(b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n', 1)
    rec.close(2)
    assert rec.body == b""


def test_json_is_not_a_generation_dialect():
    assert "json" not in pytps.DIALECTS
    assert set(_core.BODY_API_PATHS) == {"openai-embeddings", "ollama-embed", "rerank"}
    with pytest.raises(ValueError, match="json"):
        _core.StreamRecorder("nope")
