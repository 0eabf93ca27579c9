"""What `pytps rank` orders by: the objectives and the per-item columns they read. Plain data
apart from the rank's statistics, so that the parser (`pytps --help`) takes the choices without
loading numpy (tests/cli/test_startup.py)."""

from __future__ import annotations

from dataclasses import dataclass

# The per-item columns every side is read at (NaN: none).
E2E, TTFT, USER_TPS, COST, CORRECT, E2E_CORRECT = range(6)


@dataclass(frozen=True)
class Objective:
    """What the rank orders by: one statistic of the per-item columns."""

    name: str
    label: str
    unit: str  # "s", "tok/s" or "currency"
    lower_is_better: bool
    column: int
    stat: str  # "p50", "p90" or "per_correct" (a column's sum over the correct answers)


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("time_to_correct", "time to a correct answer p50", "s", True, E2E_CORRECT, "p50"),
        Objective("e2e_p50", "E2E p50", "s", True, E2E, "p50"),
        Objective("e2e_p90", "E2E p90", "s", True, E2E, "p90"),
        Objective("ttft_p50", "TTFT p50", "s", True, TTFT, "p50"),
        Objective("user_tps_p50", "output speed per user p50", "tok/s", False, USER_TPS, "p50"),
        Objective("cost_per_correct", "cost per correct response", "currency", True, COST, "per_correct"),
    )
}
