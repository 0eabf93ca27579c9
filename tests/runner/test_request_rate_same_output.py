"""Issue 42's guard: cutting the per-request Python work (journal line, summary columns) changes
nothing a run writes. Each journal line is compared field by field with one rebuilt from the run's
own records by the pre-issue-42 code path (dataclasses.asdict + a recursive JSON cleaning), and the
summary's non-timing values with those main wrote before the cuts (tests/runner/data)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytps.measure.metrics import RequestMetrics, measure
from pytps.results.folder import load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.loop import Runner

GOLDEN = Path(__file__).parent / "data" / "request_rate_summary.json"
CASES = {
    "chat": dict(api="openai-chat", output_tokens=3, requests=40, concurrency=1, input_tokens=16),
    # One token, one event: the short paths of the metrics and the summary (issue 42's second round).
    "chat1": dict(api="openai-chat", output_tokens=1, requests=40, concurrency=1, input_tokens=16),
    "embeddings": dict(api="openai-embeddings", requests=30, concurrency=1, input_tokens=16, batch_size=2),
}
# Summary leaves that depend on when things happened, not on what was sent and received.
TIMING_WORDS = ("_s", "_ns", "_tps", "_rps", "per_s", "time", "lag", "bins", "window", "concurrency", "date",
                "elapsed", "duration", "started", "host", "interval", "_ms", "_us", "spread")  # fmt: skip


def _old_jsonable(value: Any) -> Any:
    """folder._jsonable as main had it before issue 42."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return _old_jsonable(float(value))
    if isinstance(value, dict):
        return {k: _old_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_old_jsonable(v) for v in value]
    return value


def _old_scalars(m: RequestMetrics) -> dict[str, Any]:
    return dataclasses.asdict(m)


def _run(emulator, tmp_path: Path, case: str):
    cfg = make_config(emulator.base_url, out=tmp_path / case, model="m", seed=7, **CASES[case])
    return asyncio.run(Runner(cfg, keep_records=True).run())


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    return {path: value}


def stable_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary's leaves that are not timing values: counts, token totals, names, flags."""
    out = {}
    for path, v in _leaves(summary).items():
        if any(w in path for w in TIMING_WORDS) or isinstance(v, (float, list)):
            continue
        out[path] = v
    return out


@pytest.fixture(scope="module")
def emulator():
    import pytps

    with pytps.Emulator(ttft_ms=1, itl_us=200, embed_ms=1, seed=3) as emu:
        yield emu


@pytest.mark.parametrize("case", sorted(CASES))
def test_journal_lines_match_the_old_code_path(emulator, tmp_path, case):
    result = _run(emulator, tmp_path, case)
    by_index = {r.index: r for r in result.records}
    lines = load_journal(tmp_path / case)
    assert len(lines) == len(result.records) > 0
    from pytps.results.folder import journal_line

    # The bytes too: each line is what json.dumps writes for its values (whichever encoder wrote it).
    for raw in (tmp_path / case / "requests.jsonl").read_text().splitlines():
        assert raw == json.dumps(json.loads(raw), separators=(",", ":"))
    for line in lines:
        rec = by_index[line["index"]]
        m, _ = measure(rec)
        written = json.loads(json.dumps(line))
        scalars = {**_old_scalars(m), **{k: line[k] for k in ("useful", "why_not_useful", "cost") if k in line}}
        old = json.loads(json.dumps(_old_jsonable({**scalars, **{k: v for k, v in journal_line(rec, {}).items()}})))
        assert list(written) == list(old), f"{case}: the journal's fields or their order changed"
        for key in old:
            assert written[key] == old[key], f"{case}: request {rec.index} field {key}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_matches_main(emulator, tmp_path, case):
    result = _run(emulator, tmp_path, case)
    got = stable_summary(load_results(tmp_path / case)["summary"])
    assert got == stable_summary(result.summary)
    golden = json.loads(GOLDEN.read_text())[case]
    assert sorted(_leaves(result.summary)) == golden["keys"], f"{case}: the summary's fields changed"
    for key, value in golden["values"].items():
        assert got.get(key) == value, f"{case}: summary {key}"


if __name__ == "__main__":  # regenerate the golden file (on main, before a change to the per-request path)
    import tempfile

    import pytps

    data = {}
    with pytps.Emulator(ttft_ms=1, itl_us=200, embed_ms=1, seed=3) as emu:
        for name in sorted(CASES):
            res = _run(emu, Path(tempfile.mkdtemp()), name)
            data[name] = {"keys": sorted(_leaves(res.summary)), "values": stable_summary(res.summary)}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
