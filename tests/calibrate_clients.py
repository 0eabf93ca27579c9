"""Streaming clients for `pytps calibrate --client module:function` in tests/calibrate/test_calibrate.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx


def plain(base_url: str, body: dict[str, Any], on_chunk: Callable[[str], None]) -> None:
    """httpx's sync stream and json.loads per line: a user's own client."""
    with (
        httpx.Client(base_url=base_url, timeout=60) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as resp,
    ):
        for line in resp.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:]).get("choices") or []
                text = choices[0].get("delta", {}).get("content") if choices else None
                if text:
                    on_chunk(text)


def sleepy(base_url: str, body: dict[str, Any], on_chunk: Callable[[str], None]) -> None:
    """The same client, sleeping 1 ms on each chunk before the application gets it."""

    def late(text: str) -> None:
        time.sleep(0.001)
        on_chunk(text)

    plain(base_url, body, late)


async def plain_async(base_url: str, body: dict[str, Any], on_chunk: Callable[[str], None]) -> None:
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=60) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as resp,
    ):
        async for line in resp.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:]).get("choices") or []
                text = choices[0].get("delta", {}).get("content") if choices else None
                if text:
                    on_chunk(text)
