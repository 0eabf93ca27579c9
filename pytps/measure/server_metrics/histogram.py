"""Prometheus's histogram_quantile over a histogram's bucket deltas (docs/metrics.md, "server
histograms"): the same answer Prometheus gives for the same buckets."""

from __future__ import annotations

import math
from collections.abc import Mapping


def histogram_quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """The q-quantile of cumulative bucket counts {upper bound: count}, as Prometheus computes
    it: linear interpolation inside the bucket the rank falls in, the first bucket's lower bound
    0 (when its upper bound is positive); a rank in the +Inf bucket gives the largest finite
    bound. None without observations or without a +Inf bucket."""
    if not buckets or math.inf not in buckets:
        return None
    bounds = sorted(buckets)
    counts = [buckets[b] for b in bounds]
    for i in range(1, len(counts)):  # non-monotonic buckets (a scrape mid-update): as Prometheus, fix up
        counts[i] = max(counts[i], counts[i - 1])
    total = counts[-1]
    if total <= 0:
        return None
    if q <= 0:
        return -math.inf
    if q >= 1:
        return math.inf if len(bounds) < 2 else bounds[-2]
    rank = q * total
    i = next(k for k, c in enumerate(counts) if c >= rank)
    if i == len(bounds) - 1:
        return bounds[-2] if len(bounds) > 1 else None
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    lower = 0.0 if i == 0 else bounds[i - 1]
    below = 0.0 if i == 0 else counts[i - 1]
    inside = counts[i] - below
    if inside <= 0:
        return bounds[i]
    return lower + (bounds[i] - lower) * (rank - below) / inside
