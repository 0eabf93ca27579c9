"""Stubs of what csrc/bindings/register_histogram.cpp adds to pytps._core."""

from collections.abc import Sequence
from typing import Final, SupportsIndex

import numpy.typing as npt

class Histogram:
    """HdrHistogram-style latency histogram over int64 values (typically ns).

    Values in [lowest, highest] fall into log-linear buckets: each power-of-two range is cut into
    >= 10**significant_digits equal steps, so percentiles are reported within a relative error of
    10**-significant_digits (below lowest * 10**significant_digits: within an absolute error
    < lowest). count, min, max, mean and stddev are exact, computed from the recorded values, not
    the buckets. Bucket memory is allocated per octave touched (8 KiB each at 3 digits).
    An empty histogram reports 0 for min, max, value_at_percentile and 0.0 for mean and stddev.
    Thread-safe (each call holds the histogram's lock); picklable; == compares bit for bit.

    Raises ValueError when lowest < 1, highest < 2*lowest, significant_digits is not in 1..5, or
    lowest * 2 * 10**significant_digits reaches 2**62.
    """

    def __init__(self, lowest: int = 1, highest: int = 3_600_000_000_000, significant_digits: int = 3) -> None: ...
    def record(self, value: SupportsIndex, count: int = 1) -> None:
        """Records `count` occurrences of `value`. O(1).

        Raises ValueError if value is outside [lowest, highest] (the message names both) or
        count < 0; TypeError if value is not an integer; OverflowError if the total count would
        pass 2**63-1.
        """
    def record_corrected(self, value: SupportsIndex, expected_interval: int) -> None:
        """Records `value` corrected for coordinated omission (HdrHistogram semantics).

        Also records the samples a stalled sampler missed: value - k*expected_interval for
        k = 1, 2, ... while that is >= expected_interval (record_corrected(100, 30) records 100,
        70 and 40). expected_interval == 0 disables the correction. O(buckets), not O(values).
        Raises ValueError if value is out of range, expected_interval < 0, or
        0 < expected_interval < lowest.
        """
    def record_many(self, values: npt.ArrayLike) -> None:
        """Records every value of an int64 array (any shape) or sequence of ints, GIL released.

        All or nothing: raises ValueError naming the first out-of-range value and its index, and
        records nothing; TypeError for values not safely castable to int64 (floats, uint64).
        """
    def value_at_percentile(self, p: float) -> int:
        """The value at percentile p in [0, 100], HdrHistogram's definition.

        With n values recorded: the k-th smallest value, k = max(1, ceil(p/100 * n)) (the smallest
        v with at least p% of the values <= v, numpy's method="inverted_cdf"), reported as the
        highest value of its bucket clamped to the exact max: never below the true value, at most
        10**-significant_digits above it (relative). p=0 gives the exact min, p=100 the exact max.
        A rank within 16 ulps above an integer counts as that integer (99.9% of 1000 values is the
        999th). 0 when empty. Raises ValueError if p is outside [0, 100] or NaN.
        """
    def percentiles(self, ps: Sequence[float]) -> list[int]:
        """value_at_percentile for each p, in order, in one pass. ValueError as there."""
    def merge(self, other: Histogram) -> None:
        """Adds other's values: the result equals recording both streams into one histogram.

        Raises ValueError naming both configurations when lowest, highest or significant_digits
        differ; OverflowError if the total count would pass 2**63-1. h.merge(h) doubles h.
        """
    def reset(self) -> None:
        """Forgets every value and frees the bucket memory; the parameters stay."""
    def to_bytes(self) -> bytes:
        """Compact versioned binary form (magic b"PTPSHIST", version 1; docs/histogram.md)."""
    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Histogram:
        """Rebuilds a histogram from to_bytes() output.

        Raises ValueError saying what is wrong: bad magic, truncated, trailing bytes, unsupported
        version, checksum mismatch, invalid parameters, or counts and statistics that disagree;
        TypeError if data is not bytes-like.
        """
    count: Final[int]
    """Number of values recorded (exact)."""
    min: Final[int]
    """Smallest value recorded (exact); 0 when empty."""
    max: Final[int]
    """Largest value recorded (exact); 0 when empty."""
    mean: Final[float]
    """Mean of the values, from their exact 128-bit sum; 0.0 when empty."""
    stddev: Final[float]
    """Population standard deviation (ddof=0) via Welford/Chan in long double; 0.0 when empty."""
    lowest: Final[int]
    highest: Final[int]
    significant_digits: Final[int]
    allocated_bytes: Final[int]
    """Bytes currently held by the bucket counts."""
    def __eq__(self, other: object) -> bool: ...
    def __getstate__(self) -> bytes: ...
    def __setstate__(self, state: bytes) -> None: ...
