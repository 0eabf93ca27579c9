"""Streaming clients that `pytps calibrate --client NAME` measures: the SDKs, plain httpx and
aiohttp, or a user's own ``module:function``.

Every client has one shape: ``f(base_url, body, on_chunk)`` (or the same as ``async def``), where
``base_url`` is the server's root (``http://127.0.0.1:PORT``), ``body`` an OpenAI chat-completions
request (stream on) and ``on_chunk(text)`` is called with each chunk's text as the application
receives it. The stamp is taken inside on_chunk: what an application built on that client sees.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytps.errors import ConfigError

OnChunk = Callable[[str], None]
#: The built-in names; ``openai`` measures the SDK's sync and async clients, as two rows;
#: ``httpx`` (also --baseline) is plain httpx + json.loads, shown as ``httpx+json``.
CLIENT_NAMES = ("openai", "anthropic", "httpx", "aiohttp")


@dataclass
class Client:
    name: str
    fn: Callable[..., Any]
    is_async: bool


class ClientUnavailable(Exception):
    """A client that cannot be measured here (its package is not installed): skipped, one line."""


def _openai_sync(base_url: str, body: dict[str, Any], on_chunk: OnChunk) -> None:
    import openai

    client = _cached("openai_sync", base_url, lambda: openai.OpenAI(base_url=base_url + "/v1", api_key="x"))
    stream = client.chat.completions.create(**body)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            on_chunk(chunk.choices[0].delta.content)


async def _openai_async(base_url: str, body: dict[str, Any], on_chunk: OnChunk) -> None:
    import openai

    client = _cached("openai_async", base_url, lambda: openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="x"))
    stream = await client.chat.completions.create(**body)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            on_chunk(chunk.choices[0].delta.content)


def _anthropic_sync(base_url: str, body: dict[str, Any], on_chunk: OnChunk) -> None:
    import anthropic

    client = _cached("anthropic", base_url, lambda: anthropic.Anthropic(base_url=base_url, api_key="x"))
    with client.messages.stream(
        model=body["model"], max_tokens=body["max_tokens"], messages=body["messages"]
    ) as stream:
        for text in stream.text_stream:
            if text:
                on_chunk(text)


async def _httpx_plain(base_url: str, body: dict[str, Any], on_chunk: OnChunk) -> None:
    """The way most Python benchmark clients read a stream: httpx aiter_lines and json.loads."""
    import httpx

    client = _cached("httpx", base_url, lambda: httpx.AsyncClient(base_url=base_url, timeout=60))
    async with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        async for line in resp.aiter_lines():
            _chat_line(line, on_chunk)


async def _aiohttp_plain(base_url: str, body: dict[str, Any], on_chunk: OnChunk) -> None:
    import aiohttp

    session = _cached("aiohttp", base_url, aiohttp.ClientSession)
    async with session.post(base_url + "/v1/chat/completions", json=body) as resp:
        async for raw in resp.content:
            _chat_line(raw.decode().strip(), on_chunk)


_CACHE: dict[tuple[str, str], Any] = {}


def _cached(kind: str, base_url: str, make: Callable[[], Any]) -> Any:
    """One SDK client per (kind, server), as an application keeps one: its connection pool is
    part of what is measured. Async clients are bound to the loop of the cell that made them,
    so reset_clients() forgets them between cells."""
    key = (kind, base_url)
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def reset_clients() -> None:
    _CACHE.clear()


async def close_async_clients() -> None:
    """Closes the cached clients of this event loop (their pools), then forgets every client."""
    for client in list(_CACHE.values()):
        close = getattr(client, "aclose", None) or getattr(client, "close", None)
        if close is not None and inspect.iscoroutinefunction(close):
            with contextlib.suppress(Exception):
                await close()
    _CACHE.clear()


def _need(module: str, extra: str = "clients") -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        raise ClientUnavailable(f"{module} is not installed (pip install {module})") from None


def resolve_clients(name: str) -> list[Client]:
    """The client(s) a --client NAME measures; ClientUnavailable when not installed, ConfigError
    for a name that is neither built in nor module:function."""
    if name == "openai":
        _need("openai")
        return [Client("openai-sync", _openai_sync, False), Client("openai-async", _openai_async, True)]
    if name == "anthropic":
        _need("anthropic")
        return [Client("anthropic", _anthropic_sync, False)]
    if name == "httpx":
        _need("httpx")
        return [Client("httpx+json", _httpx_plain, True)]
    if name == "aiohttp":
        _need("aiohttp")
        return [Client("aiohttp", _aiohttp_plain, True)]
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(
            f"--client {name!r}: use one of {', '.join(CLIENT_NAMES)} or module:function "
            "(def f(base_url, body, on_chunk))"
        )
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ConfigError(f"--client {name}: cannot import {module!r} ({exc}); is it on PYTHONPATH?") from None
    except AttributeError:
        raise ConfigError(f"--client {name}: module {module!r} has no {attr!r}") from None
    if not callable(fn):
        raise ConfigError(f"--client {name}: {attr!r} is not a function")
    return [Client(name, fn, inspect.iscoroutinefunction(fn))]


def _chat_line(line: str, on_chunk: OnChunk) -> None:
    """One line of an OpenAI chat stream, parsed as a plain client does (json per event)."""
    if not line.startswith("data: ") or line == "data: [DONE]":
        return
    choices = json.loads(line[6:]).get("choices") or []
    text = choices[0].get("delta", {}).get("content") if choices else None
    if text:
        on_chunk(text)
