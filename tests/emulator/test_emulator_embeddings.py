"""The emulator's embedding vectors: each component the float32 of a (text, seed, index) draw,
written as printf's "%.6f" writes it (csrc/emulator/embeddings.cpp; std::to_chars since issue 42,
which must give the same characters). The draw is re-derived here in Python."""

from __future__ import annotations

import json
import struct

from emu_raw import call

import pytps

_M64 = (1 << 64) - 1


def _fnv1a(text: bytes, h: int) -> int:
    for c in text:
        h = ((h ^ c) * 1099511628211) & _M64
    return h


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _component(h: int, j: int) -> float:
    value = (_splitmix((h + j) & _M64) >> 11) * 2.0**-53 * 2.0 - 1.0
    return struct.unpack("<f", struct.pack("<f", value))[0]  # the C++ float, exactly


def _expected_text(text: str, dim: int, seed: int) -> str:
    h = _fnv1a(text.encode(), 1469598103934665603 ^ seed)
    return "[" + ",".join(f"{_component(h, j):.6f}" for j in range(dim)) + "]"


def test_each_component_is_the_draws_float32_written_as_printf_writes_it():
    texts = ["hello", "", "a longer text with \u00e9 in it", "x" * 300]
    for seed in (0, 7):
        with pytps.Emulator(seed=seed, embed_ms=0.0, embed_us_per_token=0.0, embedding_dim=48) as emu:
            for dim in (None, 1, 5, 257):
                body = {"model": "m", "input": texts} | ({"dimensions": dim} if dim else {})
                headers = {"Content-Type": "application/json"}
                r = call(emu.port, "POST", "/v1/embeddings", json.dumps(body).encode(), headers)
                assert r.status == 200, r.body[:200]
                raw = r.body.decode()
                for i, text in enumerate(texts):
                    want = _expected_text(text, dim or 48, seed)
                    assert f'"index":{i},"embedding":{want}' in raw, (seed, dim, i)
