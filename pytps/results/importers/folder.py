"""A peer's run written as a pytps results folder: results.json (its metadata, with where it came
from under `metadata.imported`, and a summary) and requests.jsonl (one line per request the peer
kept, none when it kept only aggregates), so that `pytps compare`, `pytps report` and the results
store read it as they read a run of pytps's own (docs/interop.md, "Importing peers' results")."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytps.measure.metrics import distribution
from pytps.results.files import JOURNAL, RESULTS
from pytps.results.folder import SCHEMA_VERSION, write_json_atomic
from pytps.results.importers.imported import ImportedRequest, ImportedRun, tpot_from_gaps

#: A distribution's statistics (docs/metrics.md, "Distributions"), as the summary keeps them.
STATS = ("count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p999", "max")
#: The per-request distributions an imported run's summary has, from its journal.
REQUEST_KEYS = ("ttft_s", "tpot_s", "e2e_s", "decode_tps", "user_tps")


def journal_line(index: int, req: ImportedRequest, tool: str) -> dict[str, Any]:
    """A request as a journal line: the peer's figures, and pytps's that follow from them exactly."""
    tpot = tpot_from_gaps(req.chunk_gaps_s, req.output_tokens) if req.chunk_gaps_s else req.tpot_s
    ok = req.ok
    user_tps = None
    if ok and req.e2e_s and req.output_tokens is not None:
        user_tps = req.output_tokens / req.e2e_s
    return {
        "index": index,
        "warmup": False,
        "ok": ok,
        "error": None if ok else "peer_error",
        "error_detail": None if ok else req.error,
        "ttft_s": req.ttft_s if ok else None,
        "e2e_s": req.e2e_s if ok else None,
        "tpot_s": tpot if ok else None,
        "decode_tps": 1.0 / tpot if ok and tpot else None,
        "user_tps": user_tps,
        "output_tokens": req.output_tokens,
        "prompt_tokens": req.input_tokens,
        "output_events": len(req.chunk_gaps_s) + 1 if req.chunk_gaps_s is not None else None,
        "token_source": f"peer:{tool}",
        "request_id": req.request_id,
        "peer_start_s": req.start_s,
    }


def _summary(run: ImportedRun, lines: list[dict[str, Any]]) -> dict[str, Any]:
    agg = run.aggregates
    out: dict[str, Any] = {}
    if run.requests is not None:
        ok = [line for line in lines if line["ok"]]
        for key in REQUEST_KEYS:
            out[key] = distribution(line[key] for line in ok)
        gaps = [g for r in run.requests if r.ok and r.chunk_gaps_s for g in r.chunk_gaps_s]
        if gaps:
            out["chunk_gap_s"] = distribution(gaps)
        out["requests_total"] = len(lines)
        out["requests_ok"] = len(ok)
        out["output_tokens_total"] = sum(int(line["output_tokens"] or 0) for line in ok)
        out["input_tokens_total"] = sum(int(line["prompt_tokens"] or 0) for line in ok)
    else:
        # The peer's own statistics, as it computed them: pytps recomputes nothing it cannot see.
        for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
            if isinstance(agg.get(key), dict):
                # A statistic the peer did not keep is null: present, so every reader finds the
                # key, and empty, so none takes it for a figure.
                out[key] = {stat: None for stat in STATS} | {"count": agg.get("requests_ok"), **agg[key]}
        for key in ("requests_total", "requests_ok", "output_tokens_total", "input_tokens_total"):
            if agg.get(key) is not None:  # a total the peer did not keep is left out, never 0
                out[key] = agg[key]
    for key in ("output_throughput_tps", "request_throughput_rps", "measured_window_s"):
        out[key] = agg.get(key)
    total, ok_count = out.get("requests_total"), out.get("requests_ok")
    out["error_rate"] = (total - ok_count) / total if total and ok_count is not None else None
    out["token_source"] = f"peer:{run.tool}"
    return out


def _endpoint(base_url: str | None) -> dict[str, Any]:
    if not base_url:
        return {"scheme": None, "host": None, "port": None, "path": None}  # the file does not say
    parts = urlsplit(base_url if "://" in base_url else "http://" + base_url)
    return {"scheme": parts.scheme, "host": parts.hostname, "port": parts.port, "path": parts.path or "/"}


def _metadata(run: ImportedRun, source_sha256: str | None) -> dict[str, Any]:
    return {
        "pytps_version": None,
        "date_utc": run.date_utc,
        "endpoint": _endpoint(run.base_url),
        "api": run.api,
        "model": run.model,
        # The client that measured: compare names it beside the transport of pytps's runs.
        "transport": run.tool,
        "workload": {
            "kind": "imported",
            "tool": run.tool,
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
        },
        "load": {
            "mode": "rate" if run.rate_rps else "concurrency",
            "concurrency": run.concurrency,
            "rate_rps": run.rate_rps,
            "requests": run.aggregates.get("requests_total"),
        },
        "imported": {
            "tool": run.tool,
            "tool_version": run.tool_version,
            "source": run.source,
            "source_sha256": source_sha256,
            "part": run.part,
            "imported_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "per_request": run.requests is not None,
            "notes": run.notes,
        },
    }


def write_imported(run: ImportedRun, out: Path, source_sha256: str | None) -> dict[str, Any]:
    """Writes the folder (which must not hold a run already); its results.json as written."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [journal_line(i, r, run.tool) for i, r in enumerate(run.requests or [])]
    with open(out / JOURNAL, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
    results = {
        "schema_version": SCHEMA_VERSION,
        "metadata": _metadata(run, source_sha256),
        "summary": _summary(run, lines),
    }
    write_json_atomic(out / RESULTS, results)
    return results
