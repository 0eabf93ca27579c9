#!/usr/bin/env bash
# Scale-out on Ray (tests marked `scale`): installs the `ray` extra by name (Ray is large, so the
# `test` extra leaves it out, and the package is not built again), then runs that tier, which
# starts a local Ray cluster on 127.0.0.1 with no dashboard and no usage statistics.
set -euo pipefail
mapfile -t extra < <(python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["ray"]))')
pip install -q "${extra[@]}"
export RAY_USAGE_STATS_ENABLED=0
pytest -m scale
