"""A run's results folder: its metadata, and what is written when the run ends (also after Ctrl-C).

The journal (requests.jsonl) is written as requests finish, by the runner; here are results.json
(schema: docs/results.md) and events.npz, and the RunResult handed back to the caller.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._native import _core
from .metrics import client_cpu_us_per_token, summarize
from .records import RequestRecord
from .results import SCHEMA_VERSION, write_events, write_json_atomic
from .schedule import LoadPlan

if TYPE_CHECKING:
    from .config import RunConfig
    from .transport.base import Transport


@dataclass(repr=False)
class RunResult:
    out_dir: Path
    metadata: dict[str, Any]
    summary: dict[str, Any]
    records: list[RequestRecord]
    interrupted: bool = False
    stopped_reason: str | None = None

    def __repr__(self) -> str:
        # Short on purpose: asyncio formats a finished task's result with repr (on Python 3.11
        # even on every signal.getsignal), and the records' arrays are large.
        return f"<RunResult {len(self.records)} requests in {self.out_dir}>"


def default_out_dir(model: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in model)[:60]
    return Path("results") / f"{stamp}-{safe}"


def run_metadata(cfg: RunConfig, model: str, transport: Transport) -> dict[str, Any]:
    """What results.json records about a run before it starts: what was measured, how and when."""
    from . import __version__
    from .event_loop import event_loop_name

    url = urlsplit(cfg.base_url)
    tls = None
    if url.scheme == "https":
        tls = {"library": transport.tls_library, "verify": not cfg.insecure, "ca_bundle": cfg.ca_bundle}
    return {
        "pytps_version": __version__,
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "endpoint": {"scheme": url.scheme, "host": url.hostname, "port": url.port, "path": url.path or "/"},
        "api": cfg.api,
        "model": model,
        "transport": transport.name,
        "tls": tls,
        "event_loop": event_loop_name(),
        "kernel_timestamps": cfg.kernel_timestamps,
        "http2": cfg.http2,
        "workload": cfg.workload.describe(),
        "prompt_calibration": cfg.workload.prompt_calibration(),
        "load": cfg.plan.describe(),
        "seed": cfg.seed,
        "tokenizer": cfg.tokenizer.path if cfg.tokenizer is not None else None,
        "extra_body": cfg.extra_body,
        "header_names": sorted(cfg.headers),  # values may hold secrets
        "client": {
            "host": platform.node(),
            "cpu_count": os.cpu_count(),
            "os": platform.platform(),
            "python": platform.python_version(),
        },
        "clock": {
            "source": "CLOCK_MONOTONIC",
            "unit": "ns",
            "wall_minus_monotonic_ns": time.time_ns() - _core.now_ns(),
        },
    }


def write_results(
    out_dir: Path, metadata: dict[str, Any], summary: dict[str, Any] | None, requests: list[dict[str, Any]]
) -> None:
    """results.json, whole or not at all (docs/results.md)."""
    write_json_atomic(
        out_dir / "results.json",
        {
            "schema_version": SCHEMA_VERSION,
            "metadata": metadata,
            "summary": summary,
            "requests": requests,
        },
    )


def finalize(out_dir: Path, metadata: dict[str, Any], records: list[RequestRecord], plan: LoadPlan) -> RunResult:
    """Summary, results.json and events.npz from whatever was measured: also after Ctrl-C."""
    target = plan.concurrency if plan.mode == "concurrency" else plan.max_concurrency
    summary, per_request = summarize(records, target_concurrency=target, rate_mode=plan.mode == "rate")
    cpu = metadata.get("client_cpu")
    per_token = client_cpu_us_per_token(cpu, per_request) if cpu else None
    if per_token is not None:
        summary["client_cpu_us_per_token"] = per_token
    write_results(out_dir, metadata, summary, [m.as_dict() for m in per_request])
    write_events(out_dir / "events.npz", records)
    return RunResult(out_dir=out_dir, metadata=metadata, summary=summary, records=records)
