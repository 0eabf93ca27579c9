"""The pytest plugin (entry point pytest11 "pytps"): the `pytps_records` fixture.

    def test_latency_budget(pytps_records):
        client = OpenAI(http_client=pytps.instrument())
        ...  # the code under test makes its calls
        assert pytps_records.summary()["ttft_s"]["p90"] < 0.5

The fixture is a pytps.Collector that receives, for the test's duration, the record of every
call any instrumented client (and any StreamTimer) of the process finishes. Loaded in every
pytest session where pytps is installed, so it imports nothing of pytps until a test asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def pytps_records() -> Iterator[Any]:
    """A pytps.Collector of the test's instrumented calls (.records, .summary(), .summary(tag=...))."""
    from pytps.embed.collector import Collector
    from pytps.embed.context import collecting

    collector = Collector()
    with collecting(collector):
        yield collector
