"""Stubs of what csrc/bindings/register_io.cpp adds to pytps._core."""

from typing import Any

EVENT_BACKEND: str
"""The native event loops' backend in this build: 'epoll' (Linux's default) or 'poll'
(-DPYTPS_EVENT_BACKEND=poll; every other system's default)."""

EVENT_WAIT: str
"""How the native event loops sleep: 'epoll_pwait2', or 'ppoll' (epoll without it) on epoll;
'ppoll', or 'poll' (whole ms: a system without ppoll) on poll."""

KERNEL_TIMESTAMPS: bool
"""Whether this build can take the kernel's receive stamps (SO_TIMESTAMPING: Linux only)."""

def _event_loop_probe(wait_ns: int, n: int, spin_ns: int = 60000) -> dict[str, Any]:
    """Test hook: {'wait', 'deadlines', 'sleeps', 'polls', 'spins', 'spin_window_ns', 'late_ns'}
    of a fresh event loop that waited n times for a deadline wait_ns ahead."""
