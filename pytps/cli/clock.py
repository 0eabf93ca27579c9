"""`pytps clock`: the clock's resolution and cost, the event loop's backend, and the read floor of this machine."""

from __future__ import annotations

import argparse
import json

EXAMPLES = """examples:
  pytps clock                      # clock and a 1 s read-floor measurement at 32 connections
  pytps clock --connections 128 --gap-us 250
  pytps clock --no-read-floor      # the clock only
"""


HELP = (
    "show the monotonic clock's resolution and call cost, and the kernel's CPU cost per streamed event on this machine"
)
DESCRIPTION = (
    "The monotonic clock's resolution and the cost of one call (and Python's, which must be the same "
    "clock so that native and Python stamps compare), the native event loop's backend, and the read floor: "
    "the CPU the kernel charges the barest possible reader (the event loop + recv in C++) per streamed "
    "event on this machine, which no client goes below."
)


def run(args: argparse.Namespace) -> int:
    import time

    from pytps import clock_info
    from pytps._native import _core

    py = time.get_clock_info("monotonic")
    before = time.monotonic_ns()
    native = _core.now_ns()
    after = time.monotonic_ns()
    out = {
        "clock": clock_info(),
        # The clock Python's time.monotonic_ns() reads here; "same_clock" checks that a native
        # stamp falls between two Python ones (it would not if the two read different clocks).
        "python_clock": {
            "implementation": py.implementation,
            "resolution_ns": round(py.resolution * 1e9),
            "same_clock": before <= native <= after,
        },
        "event_loop": {
            "backend": _core.EVENT_BACKEND,
            "wait": _core.EVENT_WAIT,
            "kernel_timestamps": _core.KERNEL_TIMESTAMPS,
        },
    }
    if args.read_floor:
        # What the kernel charges the barest reader per event here: pytps's client CPU per event
        # (results' client_cpu_us_per_token x tokens per event) is to be read against it.
        out["read_floor"] = _core.measure_read_floor(
            connections=args.connections, gap_ns=int(args.gap_us * 1e3), duration_ns=1_000_000_000
        )
    print(json.dumps(out, indent=2))
    return 0
