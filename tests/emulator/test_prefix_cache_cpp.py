"""The emulator's prefix cache (csrc/emulator/prefix_cache.*) in C++ alone: its known-answer tests,
clear() (POST /reset_prefix_cache) included, are tests/cpp/test_prefix_cache.cpp, compiled here
with the C++ compiler that builds the extension (ASan/UBSan on when it has them) and run."""

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


def _build(cxx: str, out: Path, sanitize: bool) -> subprocess.CompletedProcess[str]:
    flags = ["-std=c++17", "-O1", "-g", f"-I{ROOT / 'csrc'}"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    srcs = [str(ROOT / "tests" / "cpp" / "test_prefix_cache.cpp"), str(ROOT / "csrc" / "emulator" / "prefix_cache.cpp")]
    return subprocess.run([cxx, *flags, *srcs, "-o", str(out)], capture_output=True, text=True, check=False)


def test_prefix_cache_known_answers(tmp_path: Path) -> None:
    if not (ROOT / "csrc" / "emulator" / "prefix_cache.cpp").exists():
        pytest.skip("needs the source tree")
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "test_prefix_cache"
    built = _build(cxx, exe, sanitize=True)
    if built.returncode != 0:  # a compiler without the sanitizer runtimes
        built = _build(cxx, exe, sanitize=False)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures" in run.stdout
