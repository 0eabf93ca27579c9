"""`pytps report DIR --format llmd-report` (issue 39): a run and a 3-cell sweep as llm-d's
benchmark report v0.2, validated against its schema (tests/interop/data: transcribed from
llm-d/llm-d-benchmark's models, source and licence in its $comment)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parent / "data" / "llmd_benchmark_report_v0_2.schema.json").read_text())


def _pytps(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _validate(report: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(report, SCHEMA)


def test_a_run_is_a_valid_llmd_report_with_its_figures(tmp_path):
    out = tmp_path / "run"
    _pytps("run", "--requests", "8", "--concurrency", "2", "--input-tokens", "32:4", "--output-tokens", "12",
           "--out", str(out), "--no-store")  # fmt: skip
    done = _pytps("report", str(out), "--format", "llmd-report")
    report = json.loads(done.stdout)
    _validate(report)
    summary = json.loads((out / "results.json").read_text())["summary"]
    agg = report["results"]["request_performance"]["aggregate"]
    assert agg["requests"] == {**agg["requests"], "total": 8, "failures": 0}
    assert agg["latency"]["time_to_first_token"]["p50"] == summary["ttft_s"]["p50"]
    assert agg["latency"]["time_to_first_token"]["units"] == "s"
    assert agg["latency"]["inter_token_latency"]["p99"] == summary["itl_s"]["p99"]
    assert agg["throughput"]["output_token_rate"]["mean"] == summary["output_throughput_tps"]
    assert agg["requests"]["output_length"]["mean"] == 12
    load = report["scenario"]["load"]["standardized"]
    assert load["input_seq_len"] == {"distribution": "gaussian", "value": 32, "std_dev": 4.0}
    assert load["output_seq_len"] == {"distribution": "fixed", "value": 12}
    assert load["concurrency"] == 2 and load["tool"] == "pytps"
    # What it cannot fill is named, with why, beside the report.
    assert "not filled: scenario.stack:" in done.stderr and "not filled: run.cid:" in done.stderr


def test_a_sweeps_cells_are_valid_llmd_reports(tmp_path):
    out = tmp_path / "sweep"
    _pytps("sweep", "--concurrency", "1,2,3", "--requests", "6", "--input-tokens", "16", "--output-tokens", "8",
           "--out", str(out), "--no-store")  # fmt: skip
    reports = json.loads(_pytps("report", str(out), "--format", "llmd-report").stdout)
    assert [r["scenario"]["load"]["standardized"]["concurrency"] for r in reports] == [1, 2, 3]
    assert len({r["run"]["eid"] for r in reports}) == 1 and len({r["run"]["uid"] for r in reports}) == 3
    for report in reports:
        _validate(report)


def test_the_schema_refuses_what_v0_2_forbids():
    bad = {"version": "0.2", "run": {}, "results": {"request_performance": {"aggregate": {"latency": {
        "time_to_first_token": {"units": "s/token", "mean": 1.0}}}}}}  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "0.2", "run": {}, "results": {}, "pytps": 1}, SCHEMA)
