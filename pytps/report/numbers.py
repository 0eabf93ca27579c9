"""Numbers for people: fixed-point with a few significant digits, never scientific notation, and a
unicode sparkline. Shared by the console report, its Markdown form and `pytps compare`."""

from __future__ import annotations

import math
from collections.abc import Sequence

# Display units and how many decimals are worth printing in each: ms and s to the microsecond (a
# stamp's own precision is a nanosecond, but no endpoint is measured to better than a µs), µs to a
# tenth, rates to a tenth of a token per second.
MAX_DECIMALS = {"s": 6, "ms": 3, "µs": 1, "tok/s": 1, "req/s": 2, "%": 1}
SIGNIFICANT = 3

BLOCKS = "▁▂▃▄▅▆▇█"


def fmt(value: float | None, unit: str = "", significant: int = SIGNIFICANT) -> str:
    """`value` (already in `unit`) to `significant` digits in fixed point, thousands grouped.

    A nonzero value below the unit's last printed decimal shows as "<0.001" rather than "0.000" or
    "1e-06": it is a real, tiny measurement (an ITL of 1 ns between two events of one read).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    max_dec = MAX_DECIMALS.get(unit, 3)
    if value == 0:
        return "0"
    # The magnitude after rounding to `significant` digits: 9.9996 is "10.0", not "10.00".
    magnitude = math.floor(math.log10(abs(float(f"{value:.{significant}g}"))))
    decimals = min(max(significant - 1 - magnitude, 0), max_dec)
    text = f"{value:,.{decimals}f}"
    if float(text.replace(",", "")) == 0:
        return ("<" if value > 0 else ">-") + f"{10.0**-max_dec:.{max_dec}f}"
    return text


def fmt_signed(value: float | None, unit: str = "", significant: int = SIGNIFICANT) -> str:
    """As fmt, with an explicit + on positive values (differences)."""
    text = fmt(value, unit, significant)
    return "+" + text if value is not None and value > 0 and not text.startswith("<") else text


def sparkline(values: Sequence[float], width: int = 60) -> str:
    """One character per value (bucketed to at most `width` by averaging), scaled from 0 to the max."""
    vals = [float(v) for v in values]
    if not vals:
        return ""
    if len(vals) > width:
        # Equal-sized buckets by index; the last may be shorter. Averages keep the y scale in the
        # same units as one value (tokens per second), unlike sums.
        step = len(vals) / width
        buckets = [vals[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)] for i in range(width)]
        vals = [sum(b) / len(b) for b in buckets]
    top = max(vals)
    if top <= 0:
        return BLOCKS[0] * len(vals)
    last = len(BLOCKS) - 1
    return "".join(BLOCKS[min(last, max(0, round(v / top * last)))] for v in vals)
