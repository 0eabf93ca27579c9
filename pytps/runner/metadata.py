"""What results.json records about a run before it starts (its metadata): what was measured,
how and when."""

from __future__ import annotations

import os
import platform
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytps._native import _core

if TYPE_CHECKING:
    from pytps.runner.config import RunConfig
    from pytps.transport.base import Transport


def run_metadata(cfg: RunConfig, model: str, transport: Transport) -> dict[str, Any]:
    """What results.json records about a run before it starts: what was measured, how and when."""
    from pytps._version import __version__
    from pytps.runner.event_loop import event_loop_name

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
        "slo": cfg.judge.describe(),
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
