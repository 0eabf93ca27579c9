"""The C++ JSON reader (csrc/core/json_scan.*) has no Python binding: its known-answer
tests are a C++ program, tests/cpp/test_json_scan.cpp, compiled here with the C++ compiler
that builds the extension (ASan/UBSan on when the compiler has them) and run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compiler() -> str | None:
    for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return cxx
    return None


def _build(cxx: str, out: Path, sanitize: bool) -> subprocess.CompletedProcess:
    flags = ["-std=c++17", "-O1", "-g", f"-I{ROOT / 'csrc'}"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    srcs = [str(ROOT / "tests" / "cpp" / "test_json_scan.cpp"), str(ROOT / "csrc" / "core" / "json_scan.cpp")]
    return subprocess.run([cxx, *flags, *srcs, "-o", str(out)], capture_output=True, text=True)


def test_json_reader_known_answers(tmp_path):
    if not (ROOT / "csrc" / "core" / "json_scan.cpp").exists():
        pytest.skip("needs the source tree")
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "test_json_scan"
    built = _build(cxx, exe, sanitize=True)
    if built.returncode != 0:  # a compiler without the sanitizer runtimes
        built = _build(cxx, exe, sanitize=False)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures" in run.stdout
