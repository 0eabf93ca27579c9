"""The emulator's load model (pytps.sweep.load_model): FIFO slots replayed exactly, and its
capacity found where the search's own verdict turns (docs/tuning.md, "The load model's capacity")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytps.runner.schedule import iter_arrival_offsets_ns
from pytps.sweep.load_model import LoadModel, capacity_between, probe_arrivals, probe_verdict

SLO = {"ttft:p90": 0.2}


def arrivals(rate: float) -> Iterator[int]:
    return iter_arrival_offsets_ns(rate, seed=0)


def test_requests_queue_first_in_first_out_for_the_earliest_free_slot() -> None:
    model = LoadModel(slots=2, ttft_ns=3, itl_ns=1, output_tokens=8)  # each holds its slot 3 + 7 = 10 ns
    assert model.service_ns == 10
    served = model.serve([0, 0, 0, 5, 12, 25])
    admitted = [done - 10 for _, done, _ in served]
    assert admitted == [0, 0, 10, 10, 20, 25]
    # TTFT: the wait in the queue plus the model's TTFT.
    assert [round(ttft * 1e9) for _, _, ttft in served] == [3, 3, 13, 8, 11, 3]


def test_a_slot_freed_at_an_arrival_serves_it_at_once() -> None:
    served = LoadModel(slots=1, ttft_ns=4, itl_ns=2, output_tokens=4).serve([0, 10, 20])
    assert [done for _, done, _ in served] == [10, 20, 30]
    assert [round(t * 1e9) for _, _, t in served] == [4, 4, 4]


def test_the_saturation_rate_is_slots_over_service_time() -> None:
    model = LoadModel(slots=8, ttft_ns=5_000_000, itl_ns=1_000_000, output_tokens=32)
    assert model.saturation_rps == pytest.approx(8 / 0.036)


def test_a_probe_is_its_schedule_cut_at_the_sending_time() -> None:
    offsets = probe_arrivals(arrivals, 100.0, 2.0)
    assert offsets[0] == 0 and offsets[-1] < 2_000_000_000
    assert 150 < len(offsets) < 250
    assert probe_arrivals(arrivals, 100.0, 4.0)[: len(offsets)] == offsets


def test_verdicts_are_the_searchs_low_passes_far_above_saturation_fails() -> None:
    model = LoadModel(slots=8, ttft_ns=20_000_000, itl_ns=1_000_000, output_tokens=32)
    status, deciding = probe_verdict(model, probe_arrivals(arrivals, 50.0, 4.0), 50.0, SLO)
    assert status == "pass" and deciding is not None and deciding["target"] == "ttft:p90"
    assert deciding["value"] == pytest.approx(0.020)  # nobody waits at a third of the capacity
    status, deciding = probe_verdict(model, probe_arrivals(arrivals, 300.0, 4.0), 300.0, SLO)
    assert status == "fail" and deciding is not None and deciding["target"] == "saturation"


def test_the_capacity_is_where_the_verdict_turns_inside_the_bracket() -> None:
    model = LoadModel(slots=8, ttft_ns=20_000_000, itl_ns=1_000_000, output_tokens=32)
    capacity = capacity_between(model, arrivals, 4.0, SLO, 145.5, 224.7, resolution=1e-2)
    assert 145.5 <= capacity <= 224.7
    # A 4 s probe starting empty passes above the saturation rate (156.9 req/s): it is no SLO capacity.
    assert capacity > model.saturation_rps
    assert probe_verdict(model, probe_arrivals(arrivals, capacity, 4.0), capacity, SLO)[0] == "pass"


def test_a_bracket_the_model_does_not_turn_in_is_refused() -> None:
    model = LoadModel(slots=8, ttft_ns=20_000_000, itl_ns=1_000_000, output_tokens=32)
    with pytest.raises(ValueError, match="does not pass at 50 and fail at 60"):
        capacity_between(model, arrivals, 4.0, SLO, 50.0, 60.0)
