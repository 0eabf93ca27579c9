"""`pytps import`: result files that vLLM `bench serve`, aiperf and guidellm wrote themselves
against pytps's emulator (tests/interop/data/peers/README.md has the commands) read into results
folders and the store, then compared and listed beside each other. Every figure is checked against
the peer's own file; nothing the peer did not keep may appear."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytps.app.imports import import_file
from pytps.cli import main
from pytps.errors import ConfigError
from pytps.results.folder import load_journal, load_results
from pytps.store.fingerprint import file_sha256

PEERS = Path(__file__).parent / "data" / "peers"
VLLM = PEERS / "vllm" / "vllm_bench_serve.json"
VLLM_AGG = PEERS / "vllm" / "vllm_bench_serve_aggregates.json"
AIPERF = PEERS / "aiperf" / "profile_export.jsonl"
AIPERF_AGG = PEERS / "aiperf" / "profile_export_aiperf.json"
GUIDELLM = PEERS / "guidellm" / "benchmarks.json"


def _p50(values: list[float]) -> float:
    return float(np.percentile(np.asarray(values), 50, method="inverted_cdf"))


def _import(path: Path, out: Path) -> tuple[dict, list[dict]]:
    done = import_file(path, out, record=False)
    assert len(done) == 1 and done[0].folder == out
    return load_results(out), load_journal(out)


def test_recorded_files_are_small():
    for f in PEERS.rglob("*.json*"):
        assert f.stat().st_size < 200 * 1024, f


def test_vllm_detailed(tmp_path):
    raw = json.loads(VLLM.read_text())
    results, journal = _import(VLLM, tmp_path / "v")
    meta = results["metadata"]
    imported = meta["imported"]
    assert imported["tool"] == "vllm-bench-serve" and imported["per_request"] is True
    assert imported["source"] == str(VLLM.resolve()) and imported["source_sha256"] == file_sha256(VLLM)
    assert meta["model"] == "emu-model" and meta["load"]["concurrency"] == 4 and meta["api"] == "openai-chat"
    assert meta["date_utc"] is not None and imported["imported_utc"]
    assert len(journal) == raw["completed"] == 50
    assert [line["ttft_s"] for line in journal] == raw["ttfts"]
    assert [line["e2e_s"] for line in journal] == raw["latencies"]
    assert [line["output_tokens"] for line in journal] == raw["output_lens"]
    for line, gaps, n in zip(journal, raw["itls"], raw["output_lens"], strict=True):
        # One token per chunk (64 tokens, 63 gaps): pytps's TPOT is the gaps' mean.
        assert len(gaps) == n - 1
        assert line["tpot_s"] == pytest.approx(math.fsum(gaps) / (n - 1), rel=1e-12)
        assert line["user_tps"] == pytest.approx(n / line["e2e_s"])
    summary = results["summary"]
    assert summary["ttft_s"]["p50"] == _p50(raw["ttfts"])
    assert summary["ttft_s"]["count"] == 50 and summary["requests_ok"] == 50 and summary["error_rate"] == 0
    assert summary["output_throughput_tps"] == raw["output_throughput"]
    assert summary["token_source"] == "peer:vllm-bench-serve"
    # vLLM's own median is numpy's interpolated one: the same within one request's spacing.
    assert abs(summary["ttft_s"]["p50"] - raw["median_ttft_ms"] / 1000) < 0.002


def test_vllm_aggregates_only(tmp_path):
    raw = json.loads(VLLM_AGG.read_text())
    results, journal = _import(VLLM_AGG, tmp_path / "v")
    assert journal == []  # no invented requests
    imported = results["metadata"]["imported"]
    assert imported["per_request"] is False
    assert any("--save-detailed" in n for n in imported["notes"])
    ttft = results["summary"]["ttft_s"]
    assert ttft["p50"] == raw["median_ttft_ms"] / 1000 and ttft["mean"] == raw["mean_ttft_ms"] / 1000
    assert ttft["p99"] == raw["p99_ttft_ms"] / 1000 and ttft["count"] == raw["completed"]
    assert ttft["p90"] is None and ttft["max"] is None  # vLLM did not keep them: nothing is filled in
    assert results["summary"]["e2e_s"]["p50"] == raw["median_e2el_ms"] / 1000


def test_aiperf_records(tmp_path):
    records = [json.loads(line) for line in AIPERF.read_text().splitlines() if line.strip()]
    results, journal = _import(AIPERF, tmp_path / "a")
    meta = results["metadata"]
    assert meta["imported"]["tool"] == "aiperf" and meta["imported"]["tool_version"] == "0.13.0"
    # Model, endpoint and load come from profile_export_aiperf.json beside the records.
    assert meta["model"] == "emu-model" and meta["endpoint"]["port"] == 18439 and meta["load"]["concurrency"] == 4
    assert len(journal) == len(records) == 50
    for line, rec in zip(journal, records, strict=True):
        m = rec["metrics"]
        assert line["ttft_s"] == pytest.approx(m["time_to_first_token"]["value"] / 1000, rel=1e-12)
        assert line["e2e_s"] == pytest.approx(m["request_latency"]["value"] / 1000, rel=1e-12)
        # Output tokens as pytps counts them: the server's usage, not aiperf's tokenizer.
        assert line["output_tokens"] == m["usage_completion_tokens"]["value"] == 64
        assert line["output_events"] == len(m["inter_chunk_latency"]["value"]) + 1
        assert line["request_id"] == rec["metadata"]["x_request_id"]
    ttfts = [r["metrics"]["time_to_first_token"]["value"] / 1000 for r in records]
    assert results["summary"]["ttft_s"]["p50"] == pytest.approx(_p50(ttfts), rel=1e-12)


def test_aiperf_aggregates_only(tmp_path):
    raw = json.loads(AIPERF_AGG.read_text())
    results, journal = _import(AIPERF_AGG, tmp_path / "a")
    assert journal == [] and results["metadata"]["imported"]["per_request"] is False
    ttft = results["summary"]["ttft_s"]
    assert ttft["p50"] == pytest.approx(raw["time_to_first_token"]["p50"] / 1000, rel=1e-12)
    assert ttft["p90"] == pytest.approx(raw["time_to_first_token"]["p90"] / 1000, rel=1e-12)
    assert results["summary"]["requests_ok"] == 50


def test_guidellm_sampled_requests(tmp_path):
    raw = json.loads(GUIDELLM.read_text())
    bench = raw["benchmarks"][0]
    kept = bench["requests"]["successful"]
    results, journal = _import(GUIDELLM, tmp_path / "g")
    imported = results["metadata"]["imported"]
    assert imported["tool"] == "guidellm" and imported["tool_version"] == "0.8.1"
    assert imported["part"] == "concurrent@4"
    assert any("sample" in n for n in imported["notes"])  # 25 kept of 50 run
    assert len(journal) == len(kept) == 25
    for line, r in zip(journal, kept, strict=True):
        assert line["ttft_s"] == pytest.approx(r["time_to_first_token_ms"] / 1000, rel=1e-12)
        assert line["e2e_s"] == r["request_latency"]
        t = r["info"]["timings"]
        tokens, events = r["output_tokens"], t["token_iterations"]
        assert tokens == events == 64  # one token per chunk: TPOT is the span over 63 tokens
        span = t["last_token_iteration"] - t["first_token_iteration"]
        assert line["tpot_s"] == pytest.approx(span / 63, rel=1e-12)
    assert results["summary"]["requests_total"] == 25
    assert results["summary"]["output_throughput_tps"] == pytest.approx(
        bench["metrics"]["output_token_count"]["successful"]["total_sum"] / bench["duration"]
    )


def test_cli_import_compare_history(tmp_path, capsys):
    store = str(tmp_path / "store.sqlite")
    outs = {}
    for name, path in (("vllm", VLLM), ("aiperf", AIPERF), ("guidellm", GUIDELLM), ("agg", VLLM_AGG)):
        outs[name] = tmp_path / name
        assert main(["import", str(path), "--out", str(outs[name]), "--store", store]) == 0
    printed = capsys.readouterr().out
    assert "vllm-bench-serve, 50 requests, per request" in printed
    assert "aggregates only" in printed and "store run 4" in printed

    assert main(["compare", *(str(outs[n]) for n in ("vllm", "aiperf", "guidellm", "agg")), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    ttft = next(m for m in result["metrics"] if m["key"] == "ttft_s")
    medians = ttft["stats"]["p50"]["values"]
    raw_agg = json.loads(VLLM_AGG.read_text())
    assert medians[3] == raw_agg["median_ttft_ms"] / 1000
    assert ttft["stats"]["p50"]["diffs"][2]["ci95"] is None  # an aggregate has no interval
    assert ttft["stats"]["p50"]["diffs"][0]["ci95"] is not None
    assert ttft["n"] == [50, 50, 25, 0]
    assert any("Different transport" in w for w in result["warnings"])

    assert main(["history", "--store", store, "--json"]) == 0
    listed = capsys.readouterr().out
    for n in outs.values():
        assert str(n.resolve()) in listed


def test_refusals(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        import_file(tmp_path / "missing.json", tmp_path / "o", record=False)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="not a result file pytps knows"):
        import_file(other, tmp_path / "o", record=False)
    import_file(VLLM, tmp_path / "o", record=False)
    with pytest.raises(ConfigError, match="already holds a run"):
        import_file(VLLM, tmp_path / "o", record=False)


@pytest.mark.parametrize("path", [VLLM, VLLM_AGG, AIPERF_AGG, GUIDELLM], ids=["vllm", "vllm-agg", "aiperf-agg", "guidellm"])
def test_report_reads_an_imported_run(tmp_path, capsys, path):
    out = tmp_path / "r"
    import_file(path, out, record=False)
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "TTFT [ms]" in printed and "peer:" in printed
