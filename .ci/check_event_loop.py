"""Used by CI steps that test an installed build (30-poll-sdist, 32-wheel): checks that pytps is
imported from the given venv and has the expected event backend and wait, and prints how the
loop met 200 deadlines 300 µs apart, with and without the spin.

    python .ci/check_event_loop.py VENV BACKEND/WAIT
"""

import sys

import pytps
from pytps import _core

venv, expected = sys.argv[1], sys.argv[2]
assert pytps.__file__.startswith(venv), f"pytps imported from {pytps.__file__}, not from {venv}"
built = f"{_core.EVENT_BACKEND}/{_core.EVENT_WAIT}"
assert built == expected, f"this build's event loop is {built}, not {expected}"
for spin in (60_000, 0):
    r = _core._event_loop_probe(300_000, 200, spin)
    late = sorted(r["late_ns"])
    print(
        f"  {built}, spin {spin // 1000} us: {r['sleeps'] / 200:.2f} sleeps and {r['polls'] / 200:.2f} wait calls"
        f" per 300 us deadline, late p50 {late[100] / 1e3:.1f} us, p90 {late[180] / 1e3:.1f} us"
    )
