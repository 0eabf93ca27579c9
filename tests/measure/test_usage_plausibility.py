"""A server's usage counts never size an allocation and are checked against what arrived
(pytps.measure.usage): a hostile count is marked implausible per request, counted in the summary,
and the request's figures fall back to its events."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from fault_servers import FaultServer
from hostile import TEMPLATES, answer, five_events_claiming, run_pytps, stream_with_usage

from pytps.measure.metrics import itl_token_weights_ns
from pytps.measure.summary import record_weighted
from pytps.measure.usage import completion_bound, implausible_counts, prompt_bound
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps._native import _core

MB = 1 << 20


def test_the_bounds():
    assert completion_bound(5, None) == 320
    assert completion_bound(0, None) == 64
    assert completion_bound(1000, 16) == 128
    assert prompt_bound(None) == 1 << 24
    assert prompt_bound(100) == 65_636
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "cached_tokens": 0}
    assert implausible_counts(usage, 5, 16, 200) == {}
    bad = {"prompt_tokens": 2**63 - 1, "completion_tokens": 10**15, "cached_tokens": -1, "total_tokens": 12}
    assert implausible_counts(bad, 5, 16, 200) == {"prompt_tokens": 2**63 - 1, "completion_tokens": 10**15, "cached_tokens": -1}


def test_itl_counts_are_weights_not_repeated_samples():
    times = np.array([0, 1000, 3000], dtype=np.int64)
    layout = np.array([1, 10**12, 2], dtype=np.int64)
    values, counts = itl_token_weights_ns(times, layout)
    assert counts.tolist() == [10**12, 2]
    h = _core.Histogram()
    record_weighted(h, values, counts)  # 10**12 occurrences, O(1) memory
    assert h.count == 10**12 + 2


def test_completion_tokens_of_10e15_finish_the_run_with_bounded_memory(tmp_path):
    """The issue's crash: `Unable to allocate 5.68 PiB`. Now a finished run, the request marked."""
    out = tmp_path / "run"
    with FaultServer(answer(five_events_claiming(10**15))) as srv:
        code, stdout, stderr, rss = run_pytps(
            ["run", "--base-url", srv.url, "--model", "m", "--requests", "2", "--out", str(out), "--json",
             "--price-input", "1", "--price-output", "1"]
        )
    assert "Traceback" not in stderr, stderr
    assert code == 0, stderr
    assert rss < 150 * MB, rss
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["requests_ok"] == 2 and summary["usage_implausible"] == 2
    assert summary["token_source"] == "events" and summary["output_tokens_total"] == 10
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert all(line["usage_implausible"] == {"completion_tokens": 10**15, "total_tokens": 10**15 + 8} for line in lines)
    assert summary["cost"]["total"] < 1  # 8 prompt tokens and 5 output tokens a request, per million
    stdout_lines = stdout  # --json: the summary; the warning is the table's
    assert stdout_lines


@pytest.mark.parametrize("api", sorted(TEMPLATES))
def test_every_usage_edge_of_every_dialect_finishes_with_a_summary(api, tmp_path):
    """Property: each integer edge (and non-integers) in every usage field of the dialect."""
    edges = ["0", "-1", str(2**31), str(2**63 - 1), str(10**30), "1.5e3", '"12"', "null"]
    for value in edges:
        body, content_type = stream_with_usage(api, value)
        with FaultServer(answer(body, content_type)) as srv:
            cfg = make_config(srv.url, api=api, model="m", requests=2, output_tokens=8, input_tokens=8,
                              out=tmp_path / f"{api}-{len(value)}-{value[:3]}", price_input=1.0, price_output=1.0)
            result = asyncio.run(Runner(cfg).run())
        s = result.summary
        where = f"{api} with usage {value}"
        assert s["requests_total"] == 2 and s["requests_ok"] == 2, (where, s["errors"])
        assert s["output_tokens_total"] < 1000, where
        assert s["cost"]["total"] < 1, where
        if value in (str(2**63 - 1), str(2**31)):  # (-1 the core already refuses)
            assert s["usage_implausible"] == 2, where
