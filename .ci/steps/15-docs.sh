#!/usr/bin/env bash
# The docs run (docs/docs-tests.md): every ```sh and ```python block of README.md and docs/*.md,
# from a folder outside the checkout, against a `pytps serve` on 127.0.0.1 (about 4 minutes).
set -euo pipefail
pytest tests/docs -q
