import time

import pytps


def test_now_ns_is_the_monotonic_clock():
    a = time.monotonic_ns()
    b = pytps.now_ns()
    c = time.monotonic_ns()
    assert isinstance(b, int)
    assert a <= b <= c


def test_now_ns_never_goes_back():
    prev = pytps.now_ns()
    for _ in range(10000):
        t = pytps.now_ns()
        assert t >= prev
        prev = t


def test_clock_info_reports_resolution_and_cost():
    info = pytps.clock_info(calls=10000)
    assert info["source"] == "CLOCK_MONOTONIC"
    assert 0 < info["resolution_ns"] <= 1_000_000
    # One vDSO clock read is tens of ns; anything beyond 10 us means the measurement is broken.
    assert 0 < info["call_cost_ns"] < 10_000
    assert info["min_step_ns"] >= 0
