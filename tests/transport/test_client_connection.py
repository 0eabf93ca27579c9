"""The native client's per-connection state machine (csrc/client/connection.*) has table tests
in C++ that need no socket: tests/cpp/test_connection*.cpp drive a Connection with scripted
socket calls and clock (and, with OpenSSL, a real TLS session against an in-memory server).
Compiled here with the C++ compiler that builds the extension (ASan/UBSan on when the compiler
has them) and run; the program prints one line per case and checks that every state
transition was walked."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
TESTS = ROOT / "tests" / "cpp"


def _compiler() -> str | None:
    for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return cxx
    return None


def _sources() -> list[Path]:
    return [
        *sorted(TESTS.glob("test_connection*.cpp")),
        *sorted((CSRC / "client").glob("connection*.cpp")),
        CSRC / "client" / "tls.cpp",
        *sorted((CSRC / "core").glob("*.cpp")),
    ]


def _has_openssl(cxx: str, tmp: Path) -> bool:
    probe = tmp / "probe.cpp"
    probe.write_text("#include <openssl/ssl.h>\nint main() { return OPENSSL_init_ssl(0, nullptr) == 1 ? 0 : 1; }\n")
    r = subprocess.run([cxx, str(probe), "-o", str(tmp / "probe"), "-lssl", "-lcrypto"], capture_output=True)
    return r.returncode == 0


def _build(cxx: str, tmp: Path, sanitize: bool, tls: bool) -> subprocess.CompletedProcess:
    # -O0: with the sanitizers, -O1 takes minutes of compiling on a 2-core machine; the cases run in a second either way.
    flags = ["-std=c++17", "-O0", "-g", "-Wall", "-Wextra", f"-I{CSRC}"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    if tls:
        flags += ["-DPYTPS_HAVE_OPENSSL=1"]
    objs = tmp / ("san" if sanitize else "plain")
    objs.mkdir(exist_ok=True)

    def compile_one(src: Path) -> subprocess.CompletedProcess:
        obj = objs / f"{src.parent.name}_{src.stem}.o"
        return subprocess.run([cxx, *flags, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for r in pool.map(compile_one, _sources()):
            if r.returncode != 0:
                return r
    link = [cxx, *(f for f in flags if f.startswith("-fsanitize")), *map(str, sorted(objs.glob("*.o"))), "-o",
            str(tmp / "test_connection")]
    if tls:
        link += ["-lssl", "-lcrypto"]
    return subprocess.run(link, capture_output=True, text=True)


def test_connection_state_machine_table(tmp_path):
    if not (CSRC / "client" / "connection.cpp").exists():
        pytest.skip("needs the source tree")
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler")
    tls = _has_openssl(cxx, tmp_path)
    built = _build(cxx, tmp_path, sanitize=True, tls=tls)
    if built.returncode != 0:  # a compiler without the sanitizer runtimes
        built = _build(cxx, tmp_path, sanitize=False, tls=tls)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([str(tmp_path / "test_connection")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures" in run.stdout
    assert ("TLS cases: run" if tls else "TLS cases: skipped") in run.stdout, run.stdout
