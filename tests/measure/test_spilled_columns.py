"""The summary's per-request columns spill to a file a block at a time (pytps.measure.columns),
and its percentiles stay exact: the very values numpy gives over the journal."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pytps
import pytps.measure.columns as columns
from pytps.measure.columns import Columns
from pytps.measure.metrics import PERCENTILE_KEYS, PERCENTILES


@pytest.mark.parametrize("on_disk", [True, False])
def test_columns_read_back_what_was_appended(tmp_path, on_disk):
    cols = Columns({"a": "d", "b": "q", "c": "b"}, tmp_path / "x.columns" if on_disk else None, block_rows=5)
    rng = np.random.default_rng(1)
    a, b, c = rng.random(23), rng.integers(-10**12, 10**12, 23), rng.integers(0, 2, 23)
    for i in range(23):
        cols.live["a"].append(float(a[i]))
        cols.live["b"].append(int(b[i]))
        cols.live["c"].append(int(c[i]))
        cols.commit()
    assert len(cols) == 23 and len(cols.live["a"]) == 3  # four blocks spilled, three rows live
    assert (tmp_path / "x.columns").exists() == on_disk
    assert np.array_equal(cols.column("a"), a) and np.array_equal(cols.column("b"), b)
    assert np.array_equal(cols.column("c"), c.astype(np.int8))
    cols.live["a"].append(0.5), cols.live["b"].append(1), cols.live["c"].append(1)
    cols.commit()  # appending after a read still appends
    assert cols.column("a")[-1] == 0.5 and len(cols.column("b")) == 24
    cols.close()
    assert not (tmp_path / "x.columns").exists()


def test_exact_percentiles_of_a_spilled_run_are_numpys_over_the_journal(tmp_path, monkeypatch):
    monkeypatch.setattr(columns, "BLOCK_ROWS", 16)  # spill every 16 requests
    out = tmp_path / "run"
    pytps.run(requests=150, concurrency=4, output_tokens=8, input_tokens=16, warmup=3, out=out,
              emulator={"ttft_ms": 1, "itl_us": 200})
    assert not list(out.glob("*.columns")), "the spilled columns are scratch"
    summary = json.loads((out / "results.json").read_text())["summary"]
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    ok = [x for x in lines if x["ok"] and not x["warmup"]]
    assert summary["requests_ok"] == len(ok) == 150
    for key in ("ttft_s", "e2e_s", "tpot_s", "decode_tps", "user_tps", "ttfat_s"):
        values = np.asarray([x[key] for x in ok if x[key] is not None], dtype=np.float64)
        expected = np.percentile(values, PERCENTILES, method="inverted_cdf")
        got = [summary[key][k] for k in PERCENTILE_KEYS]
        assert got == expected.tolist(), key
        assert summary[key]["min"] == values.min() and summary[key]["max"] == values.max()
