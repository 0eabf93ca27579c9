#!/usr/bin/env bash
# Lint, format and type checks of the package, with the versions pinned in the `dev` extra
# (installed by name, so the package is not built again). The C++ warning check is step 10's
# build: CI compiles with -Wall -Wextra -Werror.
set -euo pipefail
mapfile -t tools < <(python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]))')
pip install -q "${tools[@]}"
ruff check pytps
ruff format --check pytps
mypy
