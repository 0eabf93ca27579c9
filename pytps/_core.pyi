"""Hand-written stubs of the compiled module pytps._core."""

from typing import Any

__version__: str

# ---- clock ------------------------------------------------------------------

def now_ns() -> int:
    """CLOCK_MONOTONIC in integer nanoseconds (the clock of time.monotonic_ns() on Linux)."""

def clock_info(calls: int = 200000) -> dict[str, Any]:
    """{'source', 'resolution_ns', 'call_cost_ns', 'min_step_ns'} of the monotonic clock."""

# ---- sse --------------------------------------------------------------------

# ---- recorder ---------------------------------------------------------------

# ---- histogram --------------------------------------------------------------

# ---- emulator ---------------------------------------------------------------
