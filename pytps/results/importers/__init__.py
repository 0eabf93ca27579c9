"""Peers' result files read as pytps runs (`pytps import`, docs/interop.md): one module per format
(`vllm_bench`: vLLM's `bench serve` JSON; `aiperf`: aiperf's profile export; `guidellm`:
guidellm's benchmarks JSON), each with `detect` and `read`; `imported` holds what they read into,
and `folder` writes it as a results folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytps.errors import ConfigError, read_json_or_lines
from pytps.results.importers import aiperf, guidellm, vllm_bench
from pytps.results.importers.imported import ImportedRun

#: --from's choices: the format's name -> (detect, read).
FORMATS: dict[str, tuple[Callable[[Any], bool], Callable[[Any, str], list[ImportedRun]]]] = {
    "vllm": (vllm_bench.detect, vllm_bench.read),
    "aiperf": (aiperf.detect, aiperf.read),
    "guidellm": (guidellm.detect, guidellm.read),
}


def load_file(path: Path) -> Any:
    """A JSON file, or JSON Lines (aiperf's per-request export) as a list of its objects."""
    return read_json_or_lines(
        path, "{path}: cannot read it ({reason})", "{path}: neither JSON nor JSON Lines (line {n}: {msg})"
    )


def read_peer_file(path: Path, fmt: str = "auto") -> tuple[str, list[ImportedRun]]:
    """(the format, the runs) a peer's result file holds."""
    data = load_file(path)
    if fmt == "auto":
        found = [name for name, (detect, _) in FORMATS.items() if detect(data)]
        if not found:
            raise ConfigError(
                f"{path}: not a result file pytps knows (vLLM bench serve JSON, aiperf's profile export, "
                "guidellm's benchmarks JSON): name its format with --from"
            )
        fmt = found[0]
    elif fmt not in FORMATS:
        raise ConfigError(f"--from {fmt}: one of auto, {', '.join(FORMATS)}")
    runs = FORMATS[fmt][1](data, str(path.resolve()))
    if not runs:
        raise ConfigError(f"{path}: no finished run in it")
    return fmt, runs
