"""docs/results.md and the files a run writes agree: every key written is documented, and every
documented key is written by some run. Real runs against the emulator, no fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from results_doc import documented, flatten

import pytps
from pytps.calibrate.envelope import THRESHOLDS, build_envelope, envelope_for, save_envelope
from pytps.results.folder import SCHEMA_VERSION, load_journal, load_results
from pytps.runner.config import make_config
from pytps.runner.event_loop import run_coroutine
from pytps.runner.loop import Runner


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two runs that between them write every documented key: a synthetic one in rate mode with
    kernel stamps and a warm-up, and a dataset one in concurrency mode with an extra body."""
    base = tmp_path_factory.mktemp("runs")
    dataset = base / "prompts.jsonl"
    dataset.write_text("\n".join(json.dumps({"prompt": f"say {i} words", "max_tokens": 8}) for i in range(4)) + "\n")
    trace = base / "trace.jsonl"
    trace.write_text(
        "\n".join(
            json.dumps({"timestamp": 10 * i, "input_length": 40, "output_length": 4 + 8 * i, "hash_ids": [1, 2, 3 + i]})
            for i in range(3)
        )
        + "\n"
    )
    settings: list[dict[str, Any]] = [
        dict(
            rate=200.0,
            requests=6,
            warmup=1,
            kernel_timestamps=True,
            transport="native",
            input_tokens=32,
            output_tokens=8,
            slo="ttft=1,e2e_500=10",
            slo_run="ttft:p90=1",
            expect_regex=".",
            price_input=1.0,
            price_output=2.0,
            request_id_header="X-Request-Id",  # provenance (issue 39): metadata.request_id_header
        ),
        # --server-metrics (issue 22): the emulator's /metrics with its power model.
        dict(
            concurrency=2,
            requests=4,
            dataset=dataset,
            extra_body={"temperature": 0},
            server_metrics=True,
            server_metrics_interval=0.05,
            server_metrics_raw=True,
        ),
        # Multi-turn sessions and a trace replay (issue 15): their metadata and summary keys.
        dict(
            turns=2,
            sessions=2,
            concurrency=2,
            input_tokens=32,
            output_tokens=8,
            max_context_tokens=4000,
            think_time="0.001",
        ),
        dict(trace=trace, trace_format="mooncake", trace_block_size=16, max_output_tokens=8, trace_speedup=10.0),
        # Image prompts and embeddings (issue 23): summary.images, the input figures, embedding_dims.
        dict(concurrency=1, requests=3, images=1, image_size="64-300", input_tokens=16, output_tokens=4),
        dict(api="openai-embeddings", batch_size=2, concurrency=1, requests=3, input_tokens=16),
        # Graded answers (issue 25): a built-in task set, its text kept, priced.
        # Graded answers (issue 25): built-in tasks over two-turn sessions (accuracy by turn), text kept, priced.
        dict(
            tasks="arithmetic,choice",
            turns=2,
            sessions=2,
            concurrency=2,
            output_tokens=8,
            keep_text=True,
            price_output=1.0,
        ),
    ]
    outs = []
    emulator = {"ttft_ms": 2, "itl_us": 300, "prefix_cache_tokens": 4096, "power_idle_w": 50, "power_per_stream_w": 10}
    with pytps.Emulator(**emulator) as emu, pytest.MonkeyPatch.context() as mp:
        for i, s in enumerate(settings):
            # The first run has a saved trust envelope (its results' `envelope`), the second none.
            mp.setenv("PYTPS_ENVELOPE_DIR", str(base / f"envelope{i}"))
            if i == 0:
                save_envelope(build_envelope("native", [envelope_cell(5000.0, n) for n in (1, 8)], THRESHOLDS))
            out = base / f"run{i}"
            cfg = make_config(emu.base_url, out=out, **s)
            run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
            outs.append(out)
    return outs


def envelope_cell(events_per_s: float, concurrency: int) -> dict[str, Any]:
    figures = {"passed": True, "flags": {"ttft": True}, "stamp_delay_p50_us": 1.0, "stamp_delay_p99_us": 2.0,
               "ttft_error_mean_ms": 0.0, "tpot_error_pct": 0.0, "cpu_us_per_event": 1.0, "kept_up": True}  # fmt: skip
    return {"events_per_s": events_per_s, "rate_tps": events_per_s, "tokens_per_event": 1,
            "concurrency": concurrency, "figures": figures}  # fmt: skip


def test_results_json_keys_are_documented_and_written(runs: list[Path]) -> None:
    sections, maps = documented()
    doc = sections["results.json"]  # its Distributions table (stats.*) included
    written: set[str] = set()
    for out in runs:
        data = load_results(out)
        assert data["schema_version"] == SCHEMA_VERSION
        flatten(data, "", maps, written)
    assert written - doc == set(), "written but not in docs/results.md"
    assert doc - written == set(), "in docs/results.md but never written"


def test_journal_keys_are_documented_and_written(runs: list[Path]) -> None:
    sections, maps = documented()
    doc = {k.removeprefix("line.") for k in sections["requests.jsonl"]}
    line_maps = {k.removeprefix("line.") for k in maps if k.startswith("line.")}
    written: set[str] = set()
    for out in runs:
        for line in load_journal(out):
            flatten(line, "", line_maps, written)
    assert written - doc == set(), "written but not in docs/results.md"
    assert doc - written == set(), "in docs/results.md but never written"


def test_events_npz_arrays_are_documented_and_written(runs: list[Path]) -> None:
    sections, _ = documented()
    doc = {k.removeprefix("npz.") for k in sections["events.npz"]}
    written: set[str] = set()
    for out in runs:
        with np.load(out / "events.npz") as npz:
            written |= set(npz.files)
    assert written == doc


def test_server_metrics_lines_are_documented_and_written(runs: list[Path]) -> None:
    sections, maps = documented()
    doc = {k.removeprefix("scrape.") for k in sections["server_metrics.jsonl"]}
    line_maps = {k.removeprefix("scrape.") for k in maps if k.startswith("scrape.")}
    written: set[str] = set()
    for out in runs:
        path = out / "server_metrics.jsonl"
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                flatten(json.loads(line), "", line_maps, written)
    assert written == doc
