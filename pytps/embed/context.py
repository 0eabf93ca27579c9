"""What a call inherits from where it is made: its tag (`pytps.tag`), the SDK call its attempts
belong to, and the collectors that receive every record (`pytps.collecting`, the pytest fixture).

Tags and calls are context variables, so each asyncio task (which copies the context it was
created in) and each thread sees its own: 32 concurrent tasks under 32 tags never mix.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from pytps.results.record import Record


class Sink(Protocol):
    """What receives records (a pytps.Collector, or anything with its add)."""

    def add(self, record: Record) -> None: ...


S = TypeVar("S", bound=Sink)

_tag: contextvars.ContextVar[str | None] = contextvars.ContextVar("pytps_tag", default=None)
# The call id of the SDK call whose attempt was sent last in this context: its retries carry it.
_call: contextvars.ContextVar[int] = contextvars.ContextVar("pytps_call", default=0)
_call_ids = itertools.count(1)

# Collectors that receive every record of the process, besides each client's own.
_sinks: list[Sink] = []


@contextmanager
def tag(name: str) -> Iterator[str]:
    """Labels every instrumented call made inside the block (and in tasks started inside it)."""
    if not isinstance(name, str) or not name:
        from pytps.errors import ConfigError

        raise ConfigError(f"pytps.tag() takes a non-empty string, not {name!r}")
    token = _tag.set(name)
    try:
        yield name
    finally:
        _tag.reset(token)


def current_tag() -> str | None:
    return _tag.get()


def call_of(retry_count: int) -> tuple[int, int]:
    """(call id, attempt number from 1) of an attempt the SDK numbered retry_count (0: the first).
    The SDKs send x-stainless-retry-count on every attempt; without it each request is a call."""
    if retry_count <= 0:
        call_id = next(_call_ids)
        _call.set(call_id)
        return call_id, 1
    call_id = _call.get() or next(_call_ids)
    return call_id, retry_count + 1


@contextmanager
def collecting(collector: S) -> Iterator[S]:
    """Within the block, `collector` also receives every record of every instrumented client and
    StreamTimer of the process (how the pytest fixture sees a test's calls)."""
    _sinks.append(collector)
    try:
        yield collector
    finally:
        _sinks.remove(collector)


def sinks() -> list[Sink]:
    return _sinks
