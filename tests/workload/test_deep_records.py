"""Issue 40, defect 14: a dataset record nested 3,000 to 5,000 deep is one line naming its file and
line (it was a RecursionError traceback), in JSONL, in a JSON list and in a reference's "expected"
given as a JSON string; a record just under the parser's limit still runs, graded, to the end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytps
from pytps.errors import ConfigError
from pytps.results.folder import load_journal
from pytps.runner.config import make_config


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [3000, 5000])
def test_a_deep_jsonl_record_is_one_line(tmp_path: Path, depth: int) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text(
        '{"prompt": "hi", "max_tokens": 4}\n' + f'{{"prompt": "hi", "max_tokens": 4, "meta": {nested_list(depth)}}}\n'
    )
    with pytest.raises(ConfigError, match=r"deep.jsonl:2: the record is nested too deep"):
        make_config("http://127.0.0.1:9", dataset=data)


def test_a_deep_json_list_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "deep.json"
    data.write_text(f'[{{"prompt": "hi", "max_tokens": 4, "meta": {nested_list(4000)}}}]')
    with pytest.raises(ConfigError, match=r"deep.json: the record is nested too deep"):
        make_config("http://127.0.0.1:9", dataset=data)


def test_a_deep_expected_json_string_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text(
        json.dumps({"prompt": "hi", "max_tokens": 4, "grader": "json", "expected": nested_object(3000)}) + "\n"
    )
    with pytest.raises(ConfigError, match=r"nested too deep"):
        make_config("http://127.0.0.1:9", dataset=data)


def test_on_the_command_line_it_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text(f'{{"prompt": "hi", "max_tokens": 4, "grader": "json", "expected": {nested_object(5000)}}}\n')
    proc = subprocess.run([sys.executable, "-m", "pytps", "run", "--base-url", "http://127.0.0.1:9", "--dataset",
                           str(data), "--no-store", "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"pytps: error: {data}:1: the record is nested too deep for the JSON parser (about 1,000 levels at most): "
        "flatten it"
    ]


def deepest_accepted(tmp_path: Path) -> int:
    """The deepest "expected" make_config accepts at this test's stack depth (bisected): the parser's
    limit, less the frames above it."""
    lo, hi = 100, 1200
    while hi - lo > 1:
        mid = (lo + hi) // 2
        data = tmp_path / f"probe{mid}.jsonl"
        data.write_text(f'{{"prompt": "hi", "max_tokens": 4, "grader": "json", "expected": {nested_object(mid)}}}\n')
        try:
            make_config("http://127.0.0.1:9", dataset=data)
            lo = mid
        except ConfigError:
            hi = mid
    return lo


def test_a_record_just_under_the_limit_runs_graded_to_the_end(tmp_path: Path) -> None:
    """A reference the parser just takes runs to the end: nothing later encodes it again deep in the
    run's stack (the fingerprint hashes each reference's digest, made when the record was checked;
    hashing the references at the end of the run was a RecursionError that lost the journal)."""
    depth = deepest_accepted(tmp_path) - 40  # pytps.run calls make_config a few frames deeper
    data = tmp_path / "deep.jsonl"
    data.write_text(f'{{"prompt": "hi", "max_tokens": 4, "grader": "json", "expected": {nested_object(depth)}}}\n')
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        pytps.run(emu.base_url, model="m", out=tmp_path / "r", requests=2, concurrency=1, dataset=data, store=False)
    lines = load_journal(tmp_path / "r")
    assert len(lines) == 2 and all(line["correct"] is False for line in lines), depth
