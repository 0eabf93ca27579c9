"""The docs are tests: every ```sh and ```python block of README.md and docs/*.md runs, in
order, as a new user would (tests/docs/doc_runner.py says how; docs/docs-tests.md for readers)."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import SkipTest

import doc_runner
import pytest


@pytest.mark.parametrize("path", doc_runner.DOCS, ids=lambda p: str(p.relative_to(doc_runner.ROOT)))
def test_doc_runs(path: Path, doc_server: int, tmp_path: Path) -> None:
    document = doc_runner.parse(path)
    cwd = tmp_path / "reader"  # a folder outside the checkout, as a new user's
    cwd.mkdir()
    env = doc_runner.environment(doc_server, tmp_path)
    doc_runner.setup_namespace(document.namespace, cwd, doc_server, env)
    ran = skipped = 0
    old_cwd, old_env = os.getcwd(), dict(os.environ)
    os.chdir(cwd)
    try:
        for example in document:
            try:
                example.evaluate()
            except SkipTest:
                skipped += 1
            else:
                ran += 1
    finally:
        os.chdir(old_cwd)
        os.environ.clear()  # a doc's Python blocks may set the SDKs' variables: not for the next test
        os.environ.update(old_env)
    print(f"{path.name}: {ran} blocks ran, {skipped} skipped")
