"""pytps.Histogram: recording, exact statistics, percentiles vs numpy, merge, record_corrected."""

import math
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytps
from pytps import Histogram

HOUR_NS = 3_600_000_000_000
# Percentiles with at most 3 decimals, as people write them (99.9, 99.99, 12.345).
PERCENTILE = st.integers(0, 100_000).map(lambda i: i / 1000)
GRID = [0, 0.1, 1, 5, 10, 25, 33.3, 50, 66.6, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100]


def true_quantile(sorted_values, p):
    """The documented definition: the k-th smallest value, k = max(1, ceil(p/100 * n)), with p
    read as the decimal the caller wrote."""
    n = len(sorted_values)
    k = max(1, math.ceil(Fraction(str(p)) * n / 100))
    return int(sorted_values[k - 1])


def exact_stddev(values):
    values = [int(v) for v in values]
    mean = Fraction(sum(values), len(values))
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def check_percentiles(h, values, ps):
    """Each reported percentile is the true one or above it by at most the stated error."""
    xs = np.sort(np.asarray(values, dtype=np.int64))
    got = h.percentiles(ps)
    assert got == [h.value_at_percentile(p) for p in ps]
    for p, g in zip(ps, got):
        t = true_quantile(xs, p)
        bound = max(t * 10.0**-h.significant_digits, h.lowest - 1)
        assert t <= g <= t + bound, (p, t, g)
        assert g <= h.max
    assert h.value_at_percentile(0) == xs[0]
    assert h.value_at_percentile(100) == xs[-1]


def same_state(a, b, stddev_rel=1e-12):
    """Bucket-exact equality; mean/stddev up to float rounding (summation order differs)."""
    assert (a.count, a.min, a.max) == (b.count, b.min, b.max)
    assert a.percentiles(GRID) == b.percentiles(GRID)
    assert a.to_bytes()[88:-8] == b.to_bytes()[88:-8]  # the bucket counts (docs/histogram.md)
    assert a.mean == pytest.approx(b.mean, rel=1e-15)
    assert a.stddev == pytest.approx(b.stddev, rel=stddev_rel, abs=1e-9)


# ---- construction -------------------------------------------------------------------------


def test_defaults_and_read_only_parameters():
    h = Histogram()
    assert (h.lowest, h.highest, h.significant_digits) == (1, HOUR_NS, 3)
    assert pytps.Histogram is Histogram and "Histogram" in pytps.__all__
    with pytest.raises(AttributeError):
        h.lowest = 5


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 100, 3), r"lowest must be >= 1 \(got 0\)"),
        ((-5, 100, 3), r"lowest must be >= 1 \(got -5\)"),
        ((10, 19, 3), r"highest must be >= 2 \* lowest \(got lowest=10, highest=19\)"),
        ((1, 1000, 0), r"significant_digits must be in 1..5 \(got 0\)"),
        ((1, 1000, 6), r"significant_digits must be in 1..5 \(got 6\)"),
        ((2**60, 2**62, 5), r"lowest=1152921504606846976 is too large for significant_digits=5"),
    ],
)
def test_constructor_validation(args, message):
    with pytest.raises(ValueError, match=message):
        Histogram(*args)


def test_smallest_valid_configuration_works():
    h = Histogram(lowest=10, highest=20, significant_digits=1)
    h.record(10)
    h.record(20)
    assert (h.count, h.min, h.max) == (2, 10, 20)


# ---- empty --------------------------------------------------------------------------------


def test_empty_histogram_reports_zeros():
    h = Histogram()
    assert (h.count, h.min, h.max, h.mean, h.stddev) == (0, 0, 0, 0.0, 0.0)
    assert h.value_at_percentile(50) == 0
    assert h.percentiles([0, 50, 100]) == [0, 0, 0]
    assert "count=0" in repr(h)
    with pytest.raises(ValueError, match="percentile must be in"):
        h.value_at_percentile(101)


# ---- recording and exact statistics -------------------------------------------------------


def test_single_value():
    h = Histogram()
    h.record(123_456_789)
    assert (h.count, h.min, h.max, h.mean, h.stddev) == (1, 123_456_789, 123_456_789, 123_456_789.0, 0.0)
    assert h.percentiles([0, 50, 99.99, 100]) == [123_456_789] * 4


def test_record_with_count_and_zero_count():
    h = Histogram()
    h.record(10, count=4)
    h.record(30)
    h.record(5000, count=0)  # no-op, but the value is still checked
    assert (h.count, h.min, h.max, h.mean) == (5, 10, 30, 14.0)
    assert h.stddev == pytest.approx(8.0)
    with pytest.raises(ValueError, match=r"count must be >= 0 \(got -1\)"):
        h.record(10, count=-1)
    with pytest.raises(ValueError, match="outside"):
        h.record(0, count=0)


def test_small_values_are_exact():
    # Below 2 * 10**d (2048 at 3 digits) every integer has its own bucket.
    h = Histogram()
    h.record_many(np.arange(1, 1001))
    assert h.value_at_percentile(50) == 500
    assert h.value_at_percentile(99.9) == 999  # 99.9 is 99.900000000000006 in binary: still 999
    h = Histogram()
    h.record_many(np.arange(1, 101))
    # numpy's own rounding of 7/100*100 = 7.000000000000001 gives the 8th value here.
    assert h.value_at_percentile(7) == 7
    assert h.value_at_percentile(7.001) == 8


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_stats_match_the_values(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10**10, size=5000)
    h = Histogram()
    for v in x[:2500]:
        h.record(int(v))  # the Welford path
    h.record_many(x[2500:])  # the batch path
    assert h.count == len(x)
    assert (h.min, h.max) == (x.min(), x.max())
    assert h.mean == pytest.approx(float(Fraction(int(x.sum()), len(x))), rel=1e-15)
    assert h.stddev == pytest.approx(exact_stddev(x), rel=1e-12)
    assert h.stddev == pytest.approx(np.std(x), rel=1e-9)  # population, like numpy's ddof=0


def test_mean_is_exact_beyond_int64_sums():
    h = Histogram()
    h.record(HOUR_NS, count=2**40)  # the sum is ~2**81
    h.record(1)
    assert h.mean == float(Fraction(HOUR_NS * 2**40 + 1, 2**40 + 1))


def test_total_count_overflow_is_refused():
    h = Histogram()
    h.record(5, count=2**63 - 1)
    with pytest.raises(OverflowError, match="2\\^63-1"):
        h.record(5)
    assert h.count == 2**63 - 1


# ---- out of range -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, 9, 1001, 2**63 - 1, -(2**63), 2**70, -(2**70)])
def test_out_of_range_value_names_value_and_range(value):
    h = Histogram(lowest=10, highest=1000)
    with pytest.raises(ValueError, match=rf"value {value} is outside the histogram's range \[lowest=10, highest=1000\]"):
        h.record(value)
    with pytest.raises(ValueError, match=rf"value {value} is outside"):
        h.record_corrected(value, 0)
    assert h.count == 0


def test_range_edges_are_recordable():
    h = Histogram(lowest=10, highest=1000)
    h.record(10)
    h.record(1000)
    assert (h.min, h.max, h.value_at_percentile(100)) == (10, 1000, 1000)


def test_non_integers_are_type_errors():
    h = Histogram()
    with pytest.raises(TypeError):
        h.record(1.5)
    with pytest.raises(TypeError):
        h.record("5")
    h.record(np.int64(7))  # anything with __index__ is fine
    assert h.count == 1


# ---- record_many --------------------------------------------------------------------------


def test_record_many_is_all_or_nothing():
    h = Histogram(lowest=1, highest=1000)
    with pytest.raises(ValueError, match=r"value 5000 at index 2 is outside .*nothing was recorded"):
        h.record_many(np.array([5, 6, 5000, 7, 0], dtype=np.int64))
    assert h.count == 0 and h.to_bytes() == Histogram(1, 1000).to_bytes()


def test_record_many_accepts_lists_shapes_and_safe_casts():
    h = Histogram()
    h.record_many([1, 2, 3])
    h.record_many(np.array([[4, 5], [6, 7]], dtype=np.int32))
    h.record_many(np.arange(10, 20, 2)[::-1])  # non-contiguous views are copied
    h.record_many([])
    h.record_many(np.array([], dtype=np.int64))
    assert h.count == 12 and (h.min, h.max) == (1, 18)


@pytest.mark.parametrize("bad", [np.array([1.0, 2.0]), np.array([1], dtype=np.uint64), ["a"], [1.5]])
def test_record_many_refuses_unsafe_casts(bad):
    with pytest.raises(TypeError, match="record_many expects integers safely castable to int64"):
        Histogram().record_many(bad)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 10**12), max_size=300))
def test_record_many_equals_record_loop(values):
    a, b = Histogram(), Histogram()
    a.record_many(np.array(values, dtype=np.int64))
    for v in values:
        b.record(v)
    same_state(a, b)


def test_record_many_releases_the_gil_safely():
    h = Histogram()
    big = np.random.default_rng(3).integers(1, 10**9, size=2_000_000)
    t = threading.Thread(target=h.record_many, args=(big,))
    t.start()
    for i in range(1, 20001):
        h.record(i)
    t.join()
    assert h.count == len(big) + 20000


# ---- percentiles vs numpy -----------------------------------------------------------------


def _distributions():
    rng = np.random.default_rng(42)
    uniform = rng.integers(1, 10**9, size=200_000)
    # Lognormal spanning 1e3..1e11 (eight decades).
    lognormal = np.clip(rng.lognormal(np.log(1e7), np.log(1e4) / 3, size=200_000), 1e3, 1e11).astype(np.int64)
    dup = np.concatenate([rng.choice([1_000, 250_000, 3_000_000, 77_777_777], size=100_000), [5, 9 * 10**11]])
    return {"uniform": uniform, "lognormal": lognormal, "duplicates": dup}


DISTRIBUTIONS = _distributions()


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("digits", [1, 2, 3, 4, 5])
def test_percentiles_within_relative_error_of_numpy(name, digits):
    x = DISTRIBUTIONS[name]
    h = Histogram(significant_digits=digits)
    h.record_many(x)
    check_percentiles(h, x, GRID)
    # The oracle is numpy's inverted_cdf wherever numpy's float rank is not at an integer boundary.
    n = len(x)
    for p, g in zip(GRID, h.percentiles(GRID)):
        r = p / 100 * n
        if abs(r - round(r)) > 1e-6:
            t = np.percentile(x, p, method="inverted_cdf")
            assert t <= g <= t * (1 + 10.0**-digits), (p, t, g)


def test_error_bound_with_a_coarse_lowest():
    # lowest=1000: values below 1000 * 10**d resolve to within < lowest, not 10**-d relative.
    x = np.random.default_rng(5).integers(1000, 10**8, size=50_000)
    h = Histogram(lowest=1000, highest=10**9, significant_digits=2)
    h.record_many(x)
    check_percentiles(h, x, GRID)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.integers(1, 3000), st.integers(1, HOUR_NS)), min_size=1, max_size=200),
    st.lists(PERCENTILE, min_size=1, max_size=10),
    st.integers(1, 5),
)
def test_percentile_property(values, ps, digits):
    h = Histogram(significant_digits=digits)
    h.record_many(values)
    check_percentiles(h, values, ps)


@pytest.mark.parametrize("p", [-0.001, 100.0001, float("nan"), float("inf"), -float("inf")])
def test_percentile_outside_0_100_raises(p):
    h = Histogram()
    h.record(5)
    with pytest.raises(ValueError, match=r"percentile must be in \[0, 100\]"):
        h.value_at_percentile(p)
    with pytest.raises(ValueError, match=r"percentile must be in \[0, 100\]"):
        h.percentiles([50, p])


# ---- record_corrected ---------------------------------------------------------------------


def test_record_corrected_by_hand():
    h = Histogram()
    h.record_corrected(100, 30)  # 100, then the missed 70 and 40 (10 < 30 stops)
    expected = Histogram()
    for v in (100, 70, 40):
        expected.record(v)
    same_state(h, expected)
    assert (h.count, h.min, h.max, h.mean) == (3, 40, 100, 70.0)
    assert h.stddev == pytest.approx(math.sqrt(600))


def test_record_corrected_edges():
    h = Histogram()
    h.record_corrected(100, 0)  # correction off
    h.record_corrected(30, 30)  # value <= interval: nothing missed
    h.record_corrected(60, 30)  # 60 and 30
    assert sorted_counts(h) == {30: 2, 60: 1, 100: 1}
    with pytest.raises(ValueError, match=r"expected_interval must be >= 0 \(got -1\)"):
        h.record_corrected(100, -1)
    with pytest.raises(ValueError, match=r"expected_interval 5 is below lowest=10"):
        Histogram(lowest=10, highest=1000).record_corrected(100, 5)
    assert h.count == 4


def sorted_counts(h):
    """{value: count}; below 2 * 10**d (2048 here) each value has its own bucket, index == value."""
    from test_histogram_bytes import decode  # the format's reference decoder

    return decode(h.to_bytes())["counts"]


def test_record_corrected_long_stall_is_fast_and_exact():
    h = Histogram()
    h.record_corrected(3_000_000_000, 1000)  # 3 million synthesised values, one bucket walk
    naive = Histogram()
    naive.record_many(np.arange(3_000_000_000, 0, -1000, dtype=np.int64))
    same_state(h, naive, stddev_rel=1e-9)
    assert h.count == 3_000_000


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10**7), st.integers(0, 10**6), st.integers(1, 3))
def test_record_corrected_equals_naive_loop(value, interval, lowest):
    value = max(value, lowest)
    h = Histogram(lowest=lowest, highest=10**8, significant_digits=2)
    if 0 < interval < lowest:
        with pytest.raises(ValueError):
            h.record_corrected(value, interval)
        return
    h.record_corrected(value, interval)
    naive = Histogram(lowest=lowest, highest=10**8, significant_digits=2)
    naive.record(value)
    missing = value - interval
    while interval > 0 and missing >= interval:
        naive.record(missing)
        missing -= interval
    same_state(h, naive, stddev_rel=1e-9)


# ---- merge --------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, HOUR_NS), max_size=100), st.lists(st.integers(1, HOUR_NS), max_size=100))
def test_merge_equals_recording_everything_into_one(xs, ys):
    a, b, both = Histogram(), Histogram(), Histogram()
    a.record_many(xs)
    b.record_many(ys)
    both.record_many(xs + ys)
    b_before = b.to_bytes()
    a.merge(b)
    same_state(a, both)
    assert b.to_bytes() == b_before


def test_merge_with_itself_doubles():
    h = Histogram()
    h.record_many([3, 5, 1_000_000])
    h.merge(h)
    doubled = Histogram()
    doubled.record_many([3, 5, 1_000_000] * 2)
    same_state(h, doubled)


def test_merge_of_different_configurations_names_both():
    a, b = Histogram(), Histogram(lowest=1, highest=10**6, significant_digits=2)
    b.record(5)
    msg = (
        r"cannot merge Histogram\(lowest=1, highest=1000000, significant_digits=2\) into "
        r"Histogram\(lowest=1, highest=3600000000000, significant_digits=3\)"
    )
    with pytest.raises(ValueError, match=msg):
        a.merge(b)
    assert a.count == 0
    with pytest.raises(TypeError):
        a.merge("not a histogram")


# ---- reset, repr, memory ------------------------------------------------------------------


def test_reset_forgets_everything():
    h = Histogram()
    h.record_many(np.arange(1, 10**6, 7))
    h.reset()
    assert h == Histogram() and h.to_bytes() == Histogram().to_bytes()
    assert (h.count, h.min, h.max, h.mean, h.stddev) == (0, 0, 0, 0.0, 0.0)
    assert h.allocated_bytes == Histogram().allocated_bytes
    h.record(42)
    assert (h.count, h.min, h.max) == (1, 42, 42)


def test_repr_shows_the_summary():
    h = Histogram()
    h.record_many([10, 20, 30])
    r = repr(h)
    for part in ("count=3", "min=10", "max=30", "mean=20", "significant_digits=3"):
        assert part in r


def test_memory_follows_the_octaves_touched():
    h = Histogram()
    assert h.allocated_bytes < 1024
    h.record_many(np.random.default_rng(0).integers(10**6, 10**8, size=10_000))  # ~7 octaves
    assert h.allocated_bytes <= 8 * 8192 + 1024
    h.record_many(np.geomspace(1, HOUR_NS, 200).astype(np.int64))  # every octave
    assert h.allocated_bytes < 300_000
