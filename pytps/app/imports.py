"""`pytps import FILE`: a peer's result file (vLLM `bench serve`, aiperf, guidellm) made into pytps
results folders, one per run the file holds, each recorded in the results store, so that `pytps
compare` and `pytps history` read them beside pytps's own runs (docs/interop.md, "Importing peers'
results")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pytps.errors import ConfigError


@dataclass(frozen=True)
class ImportedFolder:
    """One imported run: where it was written, what it holds, its row in the store (None: not recorded)."""

    folder: Path
    tool: str
    part: str | None
    requests: int | None
    per_request: bool
    ttft_p50_s: float | None
    store_id: int | None


def import_file(
    file: str | Path,
    out: str | Path | None = None,
    *,
    fmt: str = "auto",
    store: str | None = None,
    record: bool = True,
) -> list[ImportedFolder]:
    """Reads FILE, writes each of its runs as a results folder under `out` (default
    results/<UTC time>-import-<tool>/; a file of several runs gives out/1, out/2, ...), and records
    each in the results store unless `record` is False."""
    from pytps.results.folder import refuse_used_folder
    from pytps.results.importers import read_peer_file
    from pytps.results.importers.folder import write_imported
    from pytps.store.fingerprint import file_sha256
    from pytps.store.run_entry import record_in_store

    path = Path(file)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file: name a peer's result file (JSON or JSONL)")
    _, runs = read_peer_file(path, fmt)
    base = Path(out) if out else _default_out(runs[0].tool)
    folders = [base] if len(runs) == 1 else [base / str(i + 1) for i in range(len(runs))]
    for folder in folders:
        if folder.exists():
            refuse_used_folder(folder)
    sha = file_sha256(path)
    done = []
    for run, folder in zip(runs, folders, strict=True):
        results = write_imported(run, folder, sha)
        ttft = (results["summary"].get("ttft_s") or {}).get("p50")
        store_id = record_in_store(store, results, folder) if record else None
        done.append(
            ImportedFolder(
                folder=folder,
                tool=run.tool,
                part=run.part,
                requests=results["summary"].get("requests_total"),
                per_request=run.requests is not None,
                ttft_p50_s=ttft if isinstance(ttft, (int, float)) else None,
                store_id=store_id,
            )
        )
    return done


def _default_out(tool: str) -> Path:
    return Path("results") / (datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-import-{tool}")
