#!/usr/bin/env bash
# Tests that assert sub-millisecond lags, on their own after the rest, so nothing of this run
# loads the machine while they measure. Each checks first that the machine is quiet and is
# skipped with the reason when it is not (tests/conftest.py); their limits are never loosened.
set -euo pipefail
pytest -m "timing and not real_server"  # the real-server tier times itself (45-llama-server.sh)
