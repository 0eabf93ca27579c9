"""Bad paths are one line before anything runs: --out naming a file, --dataset that is not a
regular file, a dataset line over the bound."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import pytps.workload.datasets as datasets
from pytps.errors import ConfigError
from pytps.workload.datasets import load_dataset


def _pytps(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytps", *args], capture_output=True, text=True, timeout=60, **kw)


def _one_line(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.strip().splitlines() if "built-in emulator" not in x]
    assert "Traceback" not in r.stderr and len(lines) == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_out_naming_a_file_is_one_line(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    _one_line(_pytps("run", "--requests", "1", "--out", str(f)), "is a file, not a directory")
    _one_line(_pytps("run", "--requests", "1", "--out", str(f / "below")), "no directory can be made")
    _one_line(_pytps("sweep", "--concurrency", "1,2", "--out", str(f)), "is a file, not a directory")


def test_a_device_or_a_fifo_is_not_a_dataset(tmp_path):
    _one_line(_pytps("run", "--dataset", "/dev/zero", "--requests", "1"), "not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _one_line(_pytps("run", "--dataset", str(fifo), "--requests", "1"), "not a regular file")


def test_a_line_over_the_bound_names_the_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "MAX_LINE_CHARS", 100)
    f = tmp_path / "d.jsonl"
    f.write_text('{"prompt": "hi", "max_tokens": 4}\n{"prompt": "' + "x" * 200 + '", "max_tokens": 4}\n')
    with pytest.raises(ConfigError, match=r"d\.jsonl:2: a line longer than 100 characters"):
        load_dataset(f)


def test_a_dataset_from_stdin(tmp_path):
    out = tmp_path / "run"
    r = _pytps("run", "--dataset", "-", "--requests", "2", "--out", str(out), "--json",
               input='{"prompt": "hello there", "max_tokens": 4}\n' * 3)
    assert r.returncode == 0, r.stderr
