"""The docs run (test_docs.py, about 4 minutes) is its own CI step (.ci/steps/15-docs.sh): it runs
when tests/docs is named on the command line (`pytest tests/docs`), not in the default `pytest`.
The harness's own tests (that it can fail, that --help and the docs agree) run in both."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import doc_runner

import pytest

HERE = Path(__file__).resolve().parent


def _named(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _named(config):
        return
    kept = [i for i in items if not i.nodeid.startswith("tests/docs/test_docs.py::test_doc_runs")]
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def doc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The `pytps serve` that the docs' `127.0.0.1:8000` is mapped to, on a free port."""
    port = doc_runner.free_port()
    log = tmp_path_factory.mktemp("doc-server") / "serve.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytps", "serve", "--port", str(port), *doc_runner.DEFAULT_SERVE_ARGS],
            stdout=f, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        doc_runner.wait_port(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
