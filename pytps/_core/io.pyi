"""Stubs of what csrc/bindings/register_io.cpp adds to pytps._core."""

from typing import Any

EPOLL_WAIT: str
"""How the native event loops sleep: 'epoll_pwait2', or 'ppoll' (glibc or kernel without it)."""

def _event_loop_probe(wait_ns: int, n: int, spin_ns: int = 60000) -> dict[str, Any]:
    """Test hook: {'wait', 'deadlines', 'sleeps', 'polls', 'spins', 'spin_window_ns', 'late_ns'}
    of a fresh event loop that waited n times for a deadline wait_ns ahead."""
