"""Stubs of what csrc/bindings/register_clock.cpp adds to pytps._core."""

from typing import Any

def now_ns() -> int:
    """CLOCK_MONOTONIC in integer nanoseconds (the clock of time.monotonic_ns() on Linux)."""

def clock_info(calls: int = 200000) -> dict[str, Any]:
    """{'source', 'resolution_ns', 'call_cost_ns', 'min_step_ns'} of the monotonic clock."""
