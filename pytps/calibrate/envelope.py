"""The trust envelope: the (events per second per stream, concurrency) cells in which a client
stayed exact enough on this host, saved per host and transport, and a run's verdict against it.

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

#: A cell passes when each of these holds (each a flag of `pytps calibrate`).
THRESHOLDS: dict[str, float] = {"ttft_error_ms": 0.5, "tpot_error_pct": 0.5, "stamp_p99_ms": 1.0}
ENV_DIR = "PYTPS_ENVELOPE_DIR"
RUNG_TOLERANCE = 0.05
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
    from pytps import __version__

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
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(env, dict) or env.get("format") != FORMAT or not isinstance(env.get("cells"), list):
        return None
    env["path"] = str(path)
    return env


def passing_region(env: dict[str, Any]) -> list[dict[str, float]]:
    """The envelope proper: the (events/s per stream, concurrency) points whose every cell passed."""
    points: dict[tuple[float, int], bool] = {}
    for c in env["cells"]:
        key = (float(c["events_per_s"]), int(c["concurrency"]))
        points[key] = points.get(key, True) and bool(c["passed"])
    return [{"events_per_s": e, "concurrency": n} for (e, n), ok in sorted(points.items()) if ok]


def run_point(metadata: dict[str, Any], summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """A run's measured (events per second per stream, concurrency): the median decode speed over
    tokens per event, and the concurrency the run held (rate mode: Little's law, requests per
    second x mean end-to-end latency)."""
    decode = (summary.get("decode_tps") or {}).get("p50")
    tpe = summary.get("tokens_per_event") or 1.0
    events = decode / tpe if decode else None
    load = metadata.get("load") or {}
    conc: float | None = None
    if load.get("mode") == "concurrency" and load.get("concurrency"):
        conc = float(load["concurrency"])
    else:
        rps, e2e = summary.get("request_throughput_rps"), (summary.get("e2e_s") or {}).get("mean")
        conc = rps * e2e if rps and e2e else None
    return events, conc


def run_verdict(
    env: dict[str, Any] | None, metadata: dict[str, Any], summary: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The envelope as results.json records it (key ``envelope``), with this run's verdict: inside
    when the ladder cell that covers the run's point (the next rung up on both axes) was measured
    and passed. None without a saved envelope."""
    if env is None:
        return None
    out: dict[str, Any] = {
        k: env.get(k)
        for k in ("path", "transport", "date_utc", "host", "cpu_model", "cpu_count", "kernel", "pytps_version")
    }
    out["thresholds"] = env.get("thresholds")
    out["region"] = passing_region(env)
    events, conc = run_point(metadata, summary or {})
    out["run_events_per_s"], out["run_concurrency"] = events, conc
    inside: bool | None = None
    reason = None
    out["cell"] = None
    if events is None or conc is None:
        reason = "the run measured no per-stream speed or concurrency"
    else:
        rates = sorted({float(c["events_per_s"]) for c in env["cells"]})
        concs = sorted({int(c["concurrency"]) for c in env["cells"]})
        # A measured speed jitters around the rate a server schedules (a late first event makes
        # the rest look faster): within RUNG_TOLERANCE above a rung is that rung.
        up_rate = next((r for r in rates if r * (1 + RUNG_TOLERANCE) >= events), None)
        up_conc = next((n for n in concs if n * (1 + RUNG_TOLERANCE) >= conc), None)
        if up_rate is None or up_conc is None:
            inside, reason = False, "beyond the calibrated ladder"
        else:
            cover = [
                c for c in env["cells"] if float(c["events_per_s"]) == up_rate and int(c["concurrency"]) == up_conc
            ]
            if not cover:
                inside, reason = False, f"the cell {up_rate:g} events/s x {up_conc} was not measured"
            else:
                failed = sorted({f for c in cover for f, ok in (c.get("flags") or {}).items() if not ok})
                inside = all(c["passed"] for c in cover)
                if not inside:
                    why = ", ".join(failed) or "the emulator could not keep its schedule there"
                    reason = f"the cell {up_rate:g} events/s x {up_conc} failed: {why}"
                out["cell"] = {"events_per_s": up_rate, "concurrency": up_conc}
    out["inside"], out["reason"] = inside, reason
    return out
