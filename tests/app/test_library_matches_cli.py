"""pytps.sweep(), pytps.search() and pytps.matrix() run the same cells as the CLI, into the same
results folder: the same files, byte for byte once the timing fields are masked (what a clock
measured differs from run to run; everything else, settings, counts, layout, must not)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytps
from pytps.cli import main

#: Keys whose values a clock measured (or that name when): masked before the comparison.
TIMING = re.compile(
    r"(_ns|_s|_ms|_us|_tps|_rps|_per_token|_per_s)$|^(date_utc|client_cpu|clock|lateness|cpu|itl|gap|tpot"
    r"|useful_rate|goodput|throughput|knee|max_goodput|slo_capacity|envelope|kernel_read_lag|histograms"
    r"|interval|saturation|stopped|capacity|probes|bracket)"
    r"|tps_(p\d+|mean)$"  # per-user and decode speed: None when a clock saw no decode time
    r"|^response_id$"  # the server's own count of the requests it answered (one emulator serves both)
    r"|^connection_id$"  # which connection a request rode: at concurrency 2, whichever was free first
    r"|^request_id$"  # the server's id of each request, counted by the one emulator that serves both
)


def _masked(value: Any, key: str = "") -> Any:
    if TIMING.search(key):
        return "<timing>"
    if isinstance(value, dict):
        return {k: _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, key) for v in value]
    if isinstance(value, float):
        return "<measured>"  # every float of a folder is a measurement or made of one
    return value


def _files(root: Path) -> Iterator[Path]:
    return (p for p in sorted(root.rglob("*")) if p.is_file())


def _canonical(path: Path, out: Path) -> bytes:
    if path.suffix == ".json":
        return json.dumps(_masked(json.loads(path.read_text())), sort_keys=True).encode()
    if path.suffix == ".jsonl":
        # Sorted: a journal's order is the order its requests finished in, a timing like the rest.
        lines = sorted(json.dumps(_masked(json.loads(x)), sort_keys=True) for x in path.read_text().splitlines())
        return "\n".join(lines).encode()
    if path.suffix == ".npz":
        with np.load(path) as npz:  # the events' stamps are timings: their names, types and counts are not
            return repr(sorted((k, str(npz[k].dtype), npz[k].shape) for k in npz.files)).encode()
    return path.read_bytes().replace(str(out).encode(), b"<out>")


def assert_same_folder(cli: Path, lib: Path) -> None:
    names = [p.relative_to(cli) for p in _files(cli)]
    assert names == [p.relative_to(lib) for p in _files(lib)]
    assert names, "nothing was written"
    for name in names:
        a, b = _canonical(cli / name, cli), _canonical(lib / name, lib)
        assert a.replace(str(cli).encode(), b"<out>") == b.replace(str(lib).encode(), b"<out>"), name


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with pytps.Emulator(ttft_ms=2, itl_us=200, keep_truth=False) as emu:
        yield emu.base_url


COMMON = ["--requests", "3", "--output-tokens", "4", "--seed", "7", "--salt", "same", "--no-store"]
SETTINGS: dict[str, Any] = {"requests": 3, "output_tokens": 4, "seed": 7, "salt": "same", "store": False}


def test_a_sweep(url: str, tmp_path: Path) -> None:
    assert main(["sweep", "--base-url", url, "--concurrency", "1,2", *COMMON, "--out", str(tmp_path / "cli")]) == 0
    swept = pytps.sweep(url, concurrency=[1, 2], out=tmp_path / "lib", **SETTINGS)
    assert swept.exit_code == 0 and swept.out_dir == tmp_path / "lib"
    assert_same_folder(tmp_path / "cli", tmp_path / "lib")


def _keys(value: Any) -> Any:
    """A JSON value's shape: its keys, nested; lists as the set of their items' shapes."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(_keys(v), sort_keys=True) for v in value})
    return None


def assert_same_shape(cli: Path, lib: Path) -> None:
    """The same files, and in each JSON file the same keys: a capacity search's probes are bounded in
    time (--search-probe-s, issue 40), so how many requests each made is a clock's measurement too."""
    names = [p.relative_to(cli) for p in _files(cli)]
    assert names == [p.relative_to(lib) for p in _files(lib)]
    assert names, "nothing was written"
    for name in names:
        if name.suffix == ".json":
            a, b = (_keys(json.loads((root / name).read_text())) for root in (cli, lib))
        elif name.suffix == ".jsonl":
            a, b = ({json.dumps(_keys(json.loads(x)), sort_keys=True) for x in (root / name).read_text().splitlines()}
                    for root in (cli, lib))  # fmt: skip
        else:
            continue
        assert a == b, name


def test_a_search(url: str, tmp_path: Path) -> None:
    limits = ["--slo-run", "ttft:p90=5", "--search-max-probes", "3", "--search-probe-s", "1"]
    common = [flag for flag in COMMON if flag not in ("--requests", "3")]
    assert (
        main(["sweep", "--base-url", url, "--search", "concurrency", *limits, *common, "--out", str(tmp_path / "cli")])
        == 0
    )
    settings = {k: v for k, v in SETTINGS.items() if k != "requests"}
    found = pytps.search(
        url, axis="concurrency", slo_run="ttft:p90=5", max_probes=3, probe_s=1, out=tmp_path / "lib", **settings
    )
    assert found.index["search"]["capacity"] is not None
    assert_same_shape(tmp_path / "cli", tmp_path / "lib")


def test_a_matrix(url: str, tmp_path: Path) -> None:
    config = tmp_path / "bench.toml"
    config.write_text(
        f'[[endpoint]]\nname = "local"\nurl = "{url}"\n\n[[workload]]\nname = "w"\nconcurrency = [1, 2]\n',
        encoding="utf-8",
    )
    assert main(["run", "-c", str(config), *COMMON, "--out", str(tmp_path / "cli")]) == 0
    done = pytps.matrix(config, out=tmp_path / "lib", **SETTINGS)
    assert done.exit_code == 0 and len(done.index["cells"]) == 2
    assert_same_folder(tmp_path / "cli", tmp_path / "lib")


def test_the_comparison_can_fail(url: str, tmp_path: Path) -> None:
    pytps.sweep(url, concurrency=[1, 2], out=tmp_path / "a", **SETTINGS)
    pytps.sweep(url, concurrency=[1, 2], out=tmp_path / "b", **{**SETTINGS, "requests": 4})
    with pytest.raises(AssertionError):
        assert_same_folder(tmp_path / "a", tmp_path / "b")
