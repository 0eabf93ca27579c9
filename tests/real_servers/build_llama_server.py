"""Build llama.cpp's ``llama-server`` from the sources vendored in the pinned llama-cpp-python sdist.

The binary (and the sdist's llama-spm vocabulary, which the tiny test model is made from) are
cached outside the repo in ``~/.cache/pytps/llama-server-<version>/`` (``$PYTPS_CACHE_DIR``
overrides ``~/.cache/pytps``), so only the first run on a machine pays for the build
(~6 min on 2 idle cores). A missing or partial cache just builds again: the binary is moved
into place last, so its presence means the build finished.

Run as a script to build (or find) it: ``python tests/real_servers/build_llama_server.py``
prints the binary's path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# A recent release whose vendored llama.cpp has --no-webui (an alias of --no-ui), the
# `timings` object on streamed chunks, and `ignore_eos`. Bump it on purpose: the cache is
# keyed by it, so a new pin builds anew.
LLAMA_CPP_PYTHON_VERSION = "0.3.36"

# Only what llama-server needs: no web UI (a prebuilt one would be downloaded), no
# HTTPS, no curl (model downloads), one static binary.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
)

VOCAB_NAME = "ggml-vocab-llama-spm.gguf"


def cache_dir(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    root = os.environ.get("PYTPS_CACHE_DIR") or str(Path.home() / ".cache" / "pytps")
    return Path(root) / f"llama-server-{version}"


def cached(version: str = LLAMA_CPP_PYTHON_VERSION) -> tuple[Path, Path] | None:
    """(binary, vocabulary) when both are in the cache, else None."""
    d = cache_dir(version)
    binary, vocab = d / "llama-server", d / VOCAB_NAME
    if binary.is_file() and os.access(binary, os.X_OK) and vocab.is_file():
        return binary, vocab
    return None


def _log(msg: str) -> None:
    print(f"build_llama_server: {msg}", file=sys.stderr, flush=True)


def build(version: str = LLAMA_CPP_PYTHON_VERSION, jobs: int | None = None) -> tuple[Path, Path]:
    """Return (binary, vocabulary), building them into the cache first when missing."""
    hit = cached(version)
    if hit is not None:
        return hit
    dest = cache_dir(version)
    dest.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 2
    with tempfile.TemporaryDirectory(prefix="pytps-llama-build-", dir=dest) as tmp_s:
        tmp = Path(tmp_s)
        _log(f"downloading the llama-cpp-python=={version} sdist")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation",
             "--no-binary", "llama-cpp-python", f"llama-cpp-python=={version}", "-d", str(tmp)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        sdist = next(tmp.glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
                tf.extractall(tmp, filter="data")
            else:
                tf.extractall(tmp)  # PyPI's own sdist, pinned
        src = next(tmp.glob("llama_cpp_python-*/vendor/llama.cpp"))
        shutil.copyfile(src / "models" / VOCAB_NAME, dest / VOCAB_NAME)
        bdir = tmp / "build"
        # The compiler's output (thousands of lines of ggml's warnings) goes to a log beside the
        # cache; its end is shown if a step fails.
        log_path = dest / "build.log"
        with open(log_path, "wb") as log:

            def step(what: str, cmd: list[str]) -> None:
                _log(what)
                if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
                    log.flush()
                    tail = log_path.read_text(errors="replace")[-4000:]
                    raise RuntimeError(f"{' '.join(cmd)} failed; the end of {log_path}:\n{tail}")

            step(f"configuring {src}", ["cmake", "-S", str(src), "-B", str(bdir), *CMAKE_FLAGS])
            step(f"building the llama-server target with {jobs} jobs (minutes; output in {log_path})",
                 ["cmake", "--build", str(bdir), "--target", "llama-server", "-j", str(jobs)])  # fmt: skip
        built = next(p for p in bdir.rglob("llama-server") if p.is_file() and os.access(p, os.X_OK))
        staged = dest / "llama-server.partial"
        shutil.copy2(built, staged)
        staged.replace(dest / "llama-server")  # last: its presence means a finished build
    hit = cached(version)
    assert hit is not None
    _log(f"built {hit[0]}")
    return hit


if __name__ == "__main__":
    binary, _vocab = build()
    print(binary)
