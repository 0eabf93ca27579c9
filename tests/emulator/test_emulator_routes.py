"""The emulator routes on the core's table of API paths (_core.DIALECT_PATHS, core/dialect_table):
every path of every dialect is served, in that dialect, and nothing else is."""

from __future__ import annotations

from emu_raw import call

import pytps
from pytps._native import _core

# The name of each route in the ground-truth records (docs/emulator.md).
TRUTH_NAMES = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/api/chat": "ollama_chat",
    "/api/generate": "ollama_generate",
}
MSG = [{"role": "user", "content": "Say hello"}]


def _body(path: str) -> dict:
    # The field each route requires: input (Responses), prompt (completions, /api/generate), else messages.
    if path.endswith("/responses"):
        return {"model": "m", "input": "Say hello", "stream": True}
    if path.endswith(("/completions", "/generate")) and not path.endswith("/chat/completions"):
        return {"model": "m", "prompt": "Say hello", "stream": True}
    return {"model": "m", "messages": MSG, "stream": True, "max_tokens": 3}


def test_the_table_covers_every_dialect_and_names_each_path_once():
    paths = [p for ps in _core.DIALECT_PATHS.values() for p in ps]
    assert tuple(_core.DIALECT_PATHS) == _core.DIALECTS
    assert sorted(paths) == sorted(TRUTH_NAMES)


def test_every_path_of_the_table_streams_its_dialect():
    with pytps.Emulator(ttft_ms=1.0, itl_us=100.0, default_output_tokens=3, max_output_tokens=3) as emu:
        for dialect, paths in _core.DIALECT_PATHS.items():
            for path in paths:
                r = call(emu.port, "POST", path, _body(path))
                assert r.status == 200, (path, r.body[:200])
                recorder = _core.StreamRecorder(dialect)
                recorder.feed(r.body, _core.now_ns())
                recorder.close(_core.now_ns())
                assert recorder.done and recorder.error is None, (path, recorder.error)
                assert recorder.output_events == 3 and recorder.text.split() == ["the", "token", "stream"], path
                (truth,) = emu.wait_truth(1)
                assert truth["api"] == TRUTH_NAMES[path] and truth["path"] == path
                emu.truth(clear=True)
        # Not a route of the table: 404; a route asked with GET: 405, naming POST.
        assert call(emu.port, "POST", "/v1/chat", {"model": "m"}).status == 404
        wrong = call(emu.port, "GET", "/api/generate")
        assert wrong.status == 405 and wrong.headers.get("allow") == "POST"
