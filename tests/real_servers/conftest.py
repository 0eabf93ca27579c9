"""A real llama.cpp `llama-server` on 127.0.0.1 with a tiny random model made in the test.

The binary is built from the pinned llama-cpp-python sdist and cached outside the repo
(build_llama_server.py: a cold cache costs the build, minutes); the model is generated from
the sdist's vocabulary (tiny_model.py). Nothing is downloaded but the sdist from PyPI.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_llama_server import build
from tiny_model import make_model

START_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a running llama-server (stopped at the end of the session), with its
    Prometheus /metrics on (--metrics: docs/server-metrics.md)."""
    yield from _serve(tmp_path_factory, "llama")


@pytest.fixture(scope="session")
def llama_embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama-server on the same tiny model serving /v1/embeddings (mean pooling), with /metrics."""
    yield from _serve(tmp_path_factory, "llama-embed", "--embeddings", "--pooling", "mean")


@pytest.fixture(scope="session")
def llama_server_one_thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama-server computing on one thread (`-t 1`), so one of the 2 cores stays free for its HTTP
    thread and the client: for the test that holds pytps's TPOT to the server's. With `-t 2` the
    server's two compute threads take both cores from the first token on, its HTTP thread waits for a
    core to write that token, and pytps's span (first token read to last) comes out short by that wait:
    measured on the quiet machine, 5 requests x 6 runs x 3 transports: with `-t 2` 19 of 90 requests
    0.5-2.4% short and 1 of 18 medians beyond 0.5% (-0.561%); with `-t 1`, in three such rounds, 2 of 270
    requests (worst -0.58%) and no median beyond 0.07%."""
    yield from _serve(tmp_path_factory, "llama-one-thread", threads=1)


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str, *extra: str, threads: int = 2) -> Iterator[str]:
    binary, vocab = build()
    work = tmp_path_factory.mktemp(name)
    model = make_model(vocab, work / "tiny.gguf")
    yield from serve(binary, model, work, *extra, threads=threads)


def serve(binary: Path, model: Path, work: Path, *extra: str, threads: int = 2) -> Iterator[str]:
    """Runs llama-server on model (with extra flags) until the generator is closed; yields its URL."""
    port = _free_port()
    log_path = work / "llama-server.log"
    cmd = [str(binary), "-m", str(model), "-c", "4096", "-t", str(threads), "--no-webui", "--metrics",
           "--host", "127.0.0.1", "--port", str(port), *extra]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"llama-server did not start ({' '.join(cmd)}); its log ends:\n{tail}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
