"""The workload fingerprint: a hash of everything that makes two runs comparable (docs/results.md,
"The results store"). Two runs are comparable exactly when their fingerprints match.

Read from a results.json's metadata only, so a live run and an imported folder (`pytps history
add`) get the same fingerprint. What goes in: the API and its extra body, the workload's settings
(lengths, dataset and its file's hash, sessions, trace), the load's mode and level, the SLOs and
graders. What stays out: what varies from run to run by design (the seed and the prompt salt, the
request count and duration), how it was measured (transport, event loop), and prices.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

# Workload keys that differ between reruns of one setup by design: the prompts' randomness.
_RERUN_KEYS = frozenset({"seed", "salt"})
# Workload keys that report what loading found, not what was asked for.
_FOUND_KEYS = frozenset({"records", "skipped"})
_LOAD_KEYS = ("mode", "concurrency", "rate_rps", "arrival", "burstiness", "max_concurrency")
FINGERPRINT_CHARS = 12


def file_sha256(path: str | os.PathLike[str]) -> str | None:
    """The file's SHA-256, or None when it cannot be read (a dataset moved since the run)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def _workload(workload: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in workload.items() if k not in _RERUN_KEYS and k not in _FOUND_KEYS}
    source = workload.get("source")
    if isinstance(source, str):
        # The same file name can hold other prompts: the content decides.
        out["source"] = os.path.basename(source)
        out["source_sha256"] = file_sha256(source)
    trace = workload.get("trace")
    if isinstance(trace, dict):
        path = trace.get("path")
        out["trace"] = {
            "path": os.path.basename(path) if isinstance(path, str) else None,
            "sha256": file_sha256(path) if isinstance(path, str) else None,
            **{k: trace.get(k) for k in ("format", "block_size", "speedup", "window_s")},
            **{k: trace.get(k) for k in ("max_input_tokens", "max_output_tokens")},
        }
    return out


def comparable_fields(metadata: dict[str, Any]) -> dict[str, Any]:
    """The settings the fingerprint hashes, as a JSON-able dict (shown by `pytps history --json`)."""
    load = metadata.get("load") or {}
    slo = metadata.get("slo") or {}
    return {
        "api": metadata.get("api"),
        "extra_body": metadata.get("extra_body"),
        "workload": _workload(metadata.get("workload") or {}),
        "load": {k: load.get(k) for k in _LOAD_KEYS},
        "slo": {k: slo.get(k) for k in ("per_request_s", "run_s", "validation")},
    }


def fingerprint_of(fields: dict[str, Any]) -> str:
    """The first FINGERPRINT_CHARS hex digits of the SHA-256 of the fields' canonical JSON."""
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def fingerprint(metadata: dict[str, Any]) -> str:
    return fingerprint_of(comparable_fields(metadata))
