"""pytps.runner.schedule: arrival processes (statistics, exactness, determinism) and LoadPlan validation."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from pytps.errors import ConfigError
from pytps.runner.schedule import ARRIVALS, LoadPlan, arrival_offsets_ns, iter_arrival_offsets_ns

N = 20_001  # 20k gaps


def gaps_s(offsets):
    return np.diff(offsets) / 1e9


def test_poisson_gaps_are_exponential_with_mean_one_over_rate():
    offsets = arrival_offsets_ns(N, 50.0, "poisson", seed=1)
    assert offsets.dtype == np.int64 and offsets.shape == (N,) and offsets[0] == 0
    g = gaps_s(offsets)
    assert np.all(g >= 0)
    assert g.mean() == pytest.approx(1 / 50, rel=0.03)
    assert g.var() / g.mean() ** 2 == pytest.approx(1.0, rel=0.06)  # exponential: CV^2 = 1
    # Memoryless: P(gap > mean) = 1/e.
    assert np.mean(g > 1 / 50) == pytest.approx(math.exp(-1), abs=0.015)


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 1.0, 2.0, 8.0])
def test_gamma_keeps_the_mean_and_has_cv2_one_over_burstiness(burstiness):
    g = gaps_s(arrival_offsets_ns(N, 10.0, "gamma", burstiness, seed=2))
    assert g.mean() == pytest.approx(0.1, rel=0.04)
    assert g.var() / g.mean() ** 2 == pytest.approx(1 / burstiness, rel=0.1)


def test_constant_is_exactly_i_over_rate():
    for rate in (3.0, 7.0, 1000.0, 0.3, 123.456):
        offsets = arrival_offsets_ns(10_000, rate, "constant")
        exact = [round(Fraction(i) * 10**9 / Fraction(rate)) for i in range(0, 10_000, 37)]
        assert np.all(np.abs(offsets[::37] - np.array(exact)) <= 1)
    offsets = arrival_offsets_ns(1_000_000, 3.0, "constant")
    assert offsets[999_999] == 333_333_000_000_000  # no accumulated drift
    assert offsets[3] == 1_000_000_000 and offsets[1] == 333_333_333


def test_offsets_are_cumulative_sums_of_gaps_rounded_once():
    # Recompute the gaps with the documented distribution and seed: offsets are their running
    # sum rounded at the end, so no per-gap rounding error accumulates.
    rng = np.random.default_rng(9)
    gaps = rng.exponential(1e9 / 977.0, 49_999)
    expected = np.rint(np.concatenate(([0.0], np.cumsum(gaps)))).astype(np.int64)
    assert np.array_equal(arrival_offsets_ns(50_000, 977.0, "poisson", seed=9), expected)
    per_gap_rounding = np.concatenate(([0], np.cumsum(np.rint(gaps)).astype(np.int64)))
    assert not np.array_equal(per_gap_rounding, expected)


@pytest.mark.parametrize("arrival, burstiness", [("poisson", 1.0), ("gamma", 0.5), ("constant", 1.0)])
def test_same_seed_same_schedule(arrival, burstiness):
    a = arrival_offsets_ns(1000, 20.0, arrival, burstiness, seed=5)
    assert np.array_equal(a, arrival_offsets_ns(1000, 20.0, arrival, burstiness, seed=5))
    if arrival != "constant":
        assert not np.array_equal(a, arrival_offsets_ns(1000, 20.0, arrival, burstiness, seed=6))
    # A longer schedule extends a shorter one.
    assert np.array_equal(a[:10], arrival_offsets_ns(10, 20.0, arrival, burstiness, seed=5))
    assert np.all(np.diff(a) >= 0)


@pytest.mark.parametrize("arrival, burstiness", [("poisson", 1.0), ("gamma", 3.0), ("gamma", 0.2), ("constant", 1.0)])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_lazy_schedule_equals_eager_schedule(arrival, burstiness, chunk):
    eager = arrival_offsets_ns(10_000, 37.5, arrival, burstiness, seed=3)
    lazy = list(itertools.islice(iter_arrival_offsets_ns(37.5, arrival, burstiness, seed=3, chunk=chunk), 10_000))
    assert all(isinstance(x, int) for x in lazy[:5])
    assert lazy == eager.tolist()


def test_infinite_rate_and_empty_schedules():
    assert arrival_offsets_ns(5, math.inf).tolist() == [0] * 5
    assert list(itertools.islice(iter_arrival_offsets_ns(math.inf), 3)) == [0, 0, 0]
    assert arrival_offsets_ns(0, 1.0).shape == (0,)
    assert arrival_offsets_ns(1, 1.0).tolist() == [0]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(rate_rps=0), "rate must be > 0"),
        (dict(rate_rps=-1.0), "rate must be > 0"),
        (dict(rate_rps=float("nan")), "rate must be > 0"),
        (dict(rate_rps="5"), "rate must be > 0"),
        (dict(rate_rps=1.0, arrival="uniform"), "poisson, constant, gamma"),
        (dict(rate_rps=1.0, arrival="gamma", burstiness=0), "burstiness"),
        (dict(rate_rps=1.0, arrival="gamma", burstiness=math.inf), "burstiness"),
        (dict(rate_rps=1.0, arrival="poisson", burstiness=2.0), "needs arrival 'gamma'"),
    ],
)
def test_bad_schedule_arguments(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        arrival_offsets_ns(10, **kwargs)
    with pytest.raises(ConfigError, match=needle):
        iter_arrival_offsets_ns(**kwargs)


def test_bad_n():
    for n in (-1, 2.0, True):
        with pytest.raises(ValueError):
            arrival_offsets_ns(n, 1.0)
    assert ARRIVALS == ("poisson", "constant", "gamma")


# ---- LoadPlan --------------------------------------------------------------------------------


def test_default_plan_is_one_request_in_flight_for_100_requests():
    plan = LoadPlan().validate()
    assert plan.mode == "concurrency" and plan.concurrency == 1 and plan.requests == 100
    assert plan.duration_s is None and plan.max_in_flight == 1 and plan.warmup == 0


def test_rate_plan():
    plan = LoadPlan(rate_rps=8.0, arrival="gamma", burstiness=0.5, max_concurrency=16, duration_s=30).validate()
    assert plan.mode == "rate" and plan.max_in_flight == 16
    assert plan.requests is None and plan.duration_s == 30  # duration alone bounds the run
    assert LoadPlan(rate_rps=8.0).validate().max_in_flight is None
    first = list(itertools.islice(plan.arrivals_ns(seed=4), 100))
    assert first == arrival_offsets_ns(100, 8.0, "gamma", 0.5, seed=4).tolist()
    with pytest.raises(ConfigError, match="no arrival schedule"):
        LoadPlan(concurrency=2).validate().arrivals_ns()


def test_requests_and_duration_together_are_kept():
    plan = LoadPlan(concurrency=4, requests=500, duration_s=60.0, warmup=10).validate()
    assert (plan.requests, plan.duration_s, plan.warmup, plan.max_in_flight) == (500, 60.0, 10, 4)
    assert plan.validate() is plan  # idempotent
    d = plan.describe()
    assert d["mode"] == "concurrency" and d["requests"] == 500 and d["concurrency"] == 4


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(concurrency=4, rate_rps=2.0), "--max-concurrency"),
        (dict(concurrency=2, max_concurrency=4), "caps rate mode"),
        (dict(max_concurrency=4), "caps rate mode"),
        (dict(concurrency=2, arrival="gamma"), "shape rate mode"),
        (dict(concurrency=2, burstiness=0.5), "shape rate mode"),
        (dict(concurrency=0), "concurrency must be an integer >= 1"),
        (dict(concurrency=2.0), "concurrency must be an integer >= 1"),
        (dict(rate_rps=0.0), "rate must be > 0"),
        (dict(rate_rps=1.0, arrival="bursty"), "unknown arrival"),
        (dict(rate_rps=1.0, max_concurrency=0), "max_concurrency must be an integer >= 1"),
        (dict(requests=0), "requests must be an integer >= 1"),
        (dict(requests=True), "requests must be an integer >= 1"),
        (dict(duration_s=0), "duration"),
        (dict(duration_s=math.inf), "duration"),
        (dict(duration_s=float("nan")), "duration"),
        (dict(warmup=-1), "warmup must be an integer >= 0"),
        (dict(rate_rps=math.inf, duration_s=10), "infinite rate"),
    ],
)
def test_nonsense_plans_are_rejected(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        LoadPlan(**kwargs).validate()


def test_infinite_rate_with_a_request_count_is_a_burst():
    plan = LoadPlan(rate_rps=math.inf, requests=50, max_concurrency=8).validate()
    assert list(itertools.islice(plan.arrivals_ns(), 3)) == [0, 0, 0]
