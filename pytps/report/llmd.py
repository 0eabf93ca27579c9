"""A run (or each cell of a sweep) as llm-d's benchmark report, version 0.2 (llm-d/llm-d-benchmark,
workload/report/benchmark_report_v0_2.py): `pytps report DIR --format llmd-report`
(docs/interop.md).

Every field pytps has is filled from the saved folder; those it cannot fill are left out and named,
with why, in `UNFILLED` (the report's schema forbids extra fields, so the reasons go beside it).
Distributions are pytps's own (pytps.measure.metrics.distribution), never recomputed differently.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytps.results.files import RESULTS, SWEEP_INDEX
from pytps.results.folder import load_journal, load_results

VERSION = "0.2"

#: Fields of the report pytps leaves empty, and why (printed beside every report).
UNFILLED = {
    "run.cid": "pytps does not know the cluster it measured (it sees a URL)",
    "run.user": "pytps does not record who ran it",
    "scenario.stack": "pytps measures an endpoint it did not deploy: the server's components and their "
    "configuration are llm-d's to describe (metadata.server keeps what the server says of itself)",
    "scenario.load.standardized.prefix": "pytps's shared prefix is one prefix for every request, not llm-d's "
    "groups of users (its length is in Native.config.workload.shared_prefix_tokens)",
    "results.request_performance.aggregate.requests.incomplete": "pytps counts every request that did not "
    "finish well as a failure, by error class (Native: results.json summary.errors)",
    "results.request_performance.aggregate.latency.normalized_time_per_output_token": "pytps has no NTPOT "
    "figure (docs/metrics.md defines TTFT, TPOT and ITL apart)",
    "results.request_performance.time_series": "pytps's time series is per second of the whole run "
    "(results.json summary.time_series), not per-point statistics",
    "results.observability": "the server's metrics are in server_metrics.jsonl with --server-metrics; v0.2 "
    "defines no fields for them",
    "results.profiling": "pytps does not profile the server",
    "Statistics.mode, p0p1, p1, p5, p10, p25, p75": "pytps's distributions keep mean, stddev, min, p50, p90, "
    "p95, p99, p99.9 and max",
}

#: pytps's distribution keys -> v0.2 Statistics keys.
_STATS: tuple[tuple[str, str], ...] = (
    ("stddev", "stddev"), ("min", "min"), ("p50", "p50"), ("p90", "p90"), ("p95", "p95"),
    ("p99", "p99"), ("p999", "p99p9"), ("max", "max"),
)  # fmt: skip


def _statistics(dist: dict[str, Any] | None, units: str) -> dict[str, Any] | None:
    """A pytps distribution as a v0.2 Statistics object (None: no value)."""
    if not dist or dist.get("mean") is None:
        return None
    out: dict[str, Any] = {"units": units, "mean": dist["mean"]}
    for ours, theirs in _STATS:
        if dist.get(ours) is not None:
            out[theirs] = dist[ours]
    return out


def _rate(value: float | None, units: str) -> dict[str, Any] | None:
    """A run-wide rate (one value over the measured window) as Statistics with its mean only."""
    return None if value is None else {"units": units, "mean": value}


_LENGTH = re.compile(r"^\s*(\d+)\s*(?::\s*(\d+(?:\.\d+)?)|-\s*(\d+))?\s*$")


def _sequence_length(text: Any) -> dict[str, Any] | None:
    """A pytps length (`N`, `N:SD`, `LO-HI`) as a v0.2 SequenceLength; None when not one of them."""
    if text is None:
        return None
    m = _LENGTH.match(str(text))
    if m is None:
        return None
    n = int(m.group(1))
    if m.group(2) is not None:
        return {"distribution": "gaussian", "value": n, "std_dev": float(m.group(2))}
    if m.group(3) is not None:
        hi = int(m.group(3))
        return {"distribution": "random", "value": (n + hi) / 2, "min": n, "max": hi}
    return {"distribution": "fixed", "value": n}


def _iso_duration(seconds: float | None) -> str | None:
    return None if seconds is None else f"PT{seconds:.3f}S"


def run_report(directory: str | Path, experiment: str | None = None) -> dict[str, Any]:
    """The benchmark report (v0.2) of the run saved in `directory`. experiment: the run.eid (a
    sweep's name, common to its cells)."""
    from pytps.measure.metrics import distribution

    directory = Path(directory)
    results = load_results(directory)
    md, s = results["metadata"], results.get("summary") or {}
    measured_ok = [x for x in load_journal(directory) if not x.get("warmup") and x.get("ok")]
    workload, load = md.get("workload") or {}, md.get("load") or {}
    input_len = _sequence_length(workload.get("input_tokens"))
    load_std: dict[str, Any] = {
        "tool": "pytps",
        "tool_version": str(md.get("pytps_version") or ""),
        "stage": 1,
        # A dataset or trace has no set length: its prompts' measured lengths are in the results.
        "input_seq_len": input_len or {"distribution": "other", "value": _mean(measured_ok, "prompt_tokens")},
        "output_seq_len": _sequence_length(workload.get("output_tokens")),
        "rate_qps": load.get("rate_rps") if load.get("mode") == "rate" else None,
        "concurrency": load.get("concurrency") if load.get("mode") != "rate" else load.get("max_concurrency"),
    }
    if workload.get("kind") == "sessions":
        turns = (workload.get("sessions") or {}).get("turns")
        load_std["multi_turn"] = {"enabled": True, "max_turns": _sequence_length(turns)}
    total, ok = int(s.get("requests_total") or 0), int(s.get("requests_ok") or 0)
    in_rate, out_rate = s.get("input_token_throughput_tps"), s.get("output_throughput_tps")
    window = s.get("measured_window_s")
    total_rate = (in_rate or 0.0) + out_rate if out_rate is not None else None
    native = {"workload": workload, "load": load, "api": md.get("api"), "model": md.get("model")}
    return {
        "version": VERSION,
        "run": {
            "uid": directory.resolve().name,
            "eid": experiment,
            "time": {"start": md.get("date_utc"), "end": None, "duration": _iso_duration(window)},
        },
        "scenario": {
            "load": {
                "metadata": {
                    "schema_version": "0.0.1",
                    "description": f"pytps {workload.get('kind', 'synthetic')} workload, {load.get('mode')} mode",
                },
                "standardized": load_std,
                "Native": {"config": native},
            }
        },
        "results": {
            "request_performance": {
                "aggregate": {
                    "requests": {
                        "total": total,
                        "failures": total - ok,
                        "input_length": _statistics(distribution(_values(measured_ok, "prompt_tokens")), "count"),
                        "output_length": _statistics(distribution(_values(measured_ok, "output_tokens")), "count"),
                    },
                    "latency": {
                        "time_to_first_token": _statistics(s.get("ttft_s"), "s"),
                        "time_per_output_token": _statistics(s.get("tpot_s"), "s/token"),
                        "inter_token_latency": _statistics(s.get("itl_s"), "s/token"),
                        "request_latency": _statistics(s.get("e2e_s"), "s"),
                    },
                    "throughput": {
                        "input_token_rate": _rate(in_rate, "token/s"),
                        "output_token_rate": _rate(out_rate, "token/s"),
                        "total_token_rate": _rate(total_rate, "token/s"),
                        "requests_rate": _rate(s.get("request_throughput_rps"), "qps"),
                    },
                }
            }
        },
    }


def _values(lines: list[dict[str, Any]], key: str) -> list[float]:
    return [float(x[key]) for x in lines if x.get(key) is not None]


def _mean(lines: list[dict[str, Any]], key: str) -> float:
    values = _values(lines, key)
    return sum(values) / len(values) if values else 0.0


def reports(directory: str | Path) -> list[dict[str, Any]]:
    """A run's report, or one per finished cell of a sweep (in the sweep's order)."""
    directory = Path(directory)
    if (directory / RESULTS).exists():
        return [run_report(directory)]
    index = json.loads((directory / SWEEP_INDEX).read_text(encoding="utf-8"))
    name = directory.resolve().name
    return [
        run_report(directory / cell["dir"], experiment=name)
        for cell in index.get("cells", [])
        if cell.get("dir") and (directory / cell["dir"] / RESULTS).exists()
    ]


def unfilled_note() -> str:
    """The fields left empty and why, one line each, for stderr beside the report."""
    return "\n".join(f"llmd-report: not filled: {k}: {why}" for k, why in UNFILLED.items())
