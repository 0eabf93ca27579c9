"""What a results folder must hold after any stop, Ctrl-C included (tests/cli, tests/real_servers)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def check_results_folder(out: Path) -> None:
    """No folder, or one whose files agree on the requests."""
    if not out.exists():
        return
    results = json.loads((out / "results.json").read_text())
    assert results["summary"] is not None, "results.json was left unfinished"
    assert not (out / "events.log").exists(), "the event log was not folded into events.npz"
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    measured = [x for x in lines if not x["warmup"]]
    assert results["summary"]["requests_total"] == len(measured)
    with np.load(out / "events.npz") as events:
        assert len(events["t_ns"]) == sum(x["output_events"] for x in lines)
        assert set(events["request_index"].tolist()) <= {x["index"] for x in lines}
