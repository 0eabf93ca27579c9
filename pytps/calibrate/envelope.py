"""The trust envelope: the (events per second per stream, concurrency) cells in which a client
stayed exact enough on this host, saved per host and transport, and a run's verdict against it
(pytps.measure.envelope: the run itself uses that, with the envelope handed to it as a value).

The file lives in the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``)/pytps/,
named ``envelope-<host>-<transport>.json``; ``PYTPS_ENVELOPE_DIR`` names another directory.
"""

from __future__ import annotations

import json
import os
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytps.errors import read_json_if_any
from pytps.measure.envelope import RUNG_TOLERANCE, passing_region, run_point, run_verdict
from pytps.transport.registry import TransportSettings, choose_transport

__all__ = [
    "FORMAT",
    "RUNG_TOLERANCE",
    "THRESHOLDS",
    "build_envelope",
    "envelope_dir",
    "envelope_for",
    "envelope_path",
    "load_envelope",
    "passing_region",
    "run_point",
    "run_verdict",
    "save_envelope",
]

#: A cell passes when each of these holds (each a flag of `pytps calibrate`).
THRESHOLDS: dict[str, float] = {"ttft_error_ms": 0.5, "tpot_error_pct": 0.5, "stamp_p99_ms": 1.0}
ENV_DIR = "PYTPS_ENVELOPE_DIR"
LOWER_BOUND_NOTE = (
    "The emulator shared this host's cores with the client, so this envelope is a lower bound on "
    "what the client does against a remote server."
)
FORMAT = "pytps-envelope/1"


def envelope_dir() -> Path:
    """Where envelopes are kept: $PYTPS_ENVELOPE_DIR, else the user cache directory's pytps/."""
    own = os.environ.get(ENV_DIR)
    if own:
        return Path(own)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pytps"


def host_name() -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", platform.node() or "localhost")[:64]


def envelope_path(transport: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", transport)[:64]
    return envelope_dir() / f"envelope-{host_name()}-{safe}.json"


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_facts() -> dict[str, Any]:
    from pytps._version import __version__

    return {
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pytps_version": __version__,
    }


def build_envelope(transport: str, cells: list[dict[str, Any]], thresholds: dict[str, float]) -> dict[str, Any]:
    """The saved form: the host, the thresholds, and every cell with its verdict and headline
    figures (cells a stopped row never measured are absent)."""
    keep = (
        "stamp_delay_p50_us", "stamp_delay_p99_us", "ttft_error_mean_ms", "tpot_error_pct",
        "cpu_us_per_event", "kept_up",
    )  # fmt: skip
    return {
        "format": FORMAT,
        "transport": transport,
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **host_facts(),
        "thresholds": dict(thresholds),
        "lower_bound": LOWER_BOUND_NOTE,
        "cells": [
            {
                "events_per_s": c["events_per_s"],
                "rate_tps": c["rate_tps"],
                "tokens_per_event": c["tokens_per_event"],
                "concurrency": c["concurrency"],
                "passed": c["figures"]["passed"],
                "flags": c["figures"]["flags"],
                **{k: c["figures"][k] for k in keep},
            }
            for c in cells
        ],
    }


def save_envelope(env: dict[str, Any]) -> Path:
    path = envelope_path(env["transport"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(env, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_envelope(transport: str) -> dict[str, Any] | None:
    """The saved envelope of this host and transport; None when there is none (or it is unreadable:
    a run is never stopped by its cache)."""
    path = envelope_path(transport)
    env = read_json_if_any(path)
    if not isinstance(env, dict) or env.get("format") != FORMAT or not isinstance(env.get("cells"), list):
        return None
    env["path"] = str(path)
    return env


def envelope_for(cfg: TransportSettings) -> dict[str, Any] | None:
    """This host's envelope for the transport a run of cfg would use (a Runner's `envelope`)."""
    return load_envelope(choose_transport(cfg))
