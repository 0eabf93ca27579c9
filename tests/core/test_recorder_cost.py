"""What the recorder's hot path costs, counted rather than timed: heap allocations in the
steady state, entries probed to find a tool call, events served by the shape cache. The
counts are C++-only, so the tests are a C++ program, tests/cpp/test_stream_recorder.cpp,
compiled here against csrc/core (like tests/core/test_json_scan.py) and run once per test.

No sanitizers: the program counts allocations by replacing the global operator new."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "csrc" / "core"
SOURCES = ["stream_recorder.cpp", "stream_state.cpp", "sse_parser.cpp", "json_scan.cpp", "dialect_common.cpp", "dialect_openai.cpp",
           "dialect_anthropic.cpp", "dialect_ollama.cpp", "dialect_audio.cpp", "audio_body.cpp"]
TESTS = ["steady_state_allocates_nothing", "tool_lookup_work_is_bounded", "refusal_first_keeps_the_fast_path"]


def _compiler() -> str | None:
    for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return cxx
    return None


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    if not CORE.exists():
        pytest.skip("needs the source tree")
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path_factory.mktemp("cost") / "test_stream_recorder"
    srcs = [str(ROOT / "tests" / "cpp" / "test_stream_recorder.cpp"), *(str(CORE / s) for s in SOURCES)]
    built = subprocess.run([cxx, "-std=c++17", "-O1", "-g", f"-I{ROOT / 'csrc'}", *srcs, "-o", str(exe)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    listed = subprocess.run([str(exe), "--list"], capture_output=True, text=True, check=True).stdout.split()
    assert listed == TESTS, "TESTS here and kTests in the program disagree"
    return exe


@pytest.mark.parametrize("name", TESTS)
def test_recorder_cost(program, name):
    run = subprocess.run([str(program), name], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures" in run.stdout
