#!/usr/bin/env bash
# Tests that assert sub-millisecond lags, on their own after the rest, so nothing of this run
# loads the machine while they measure. Each checks first that the machine is quiet and is
# skipped with the reason when it is not (tests/conftest.py); their limits are never loosened.
set -euo pipefail
# The voice timing tests' speech (realtime, the voice turn): espeak-ng, installed when missing.
command -v espeak-ng >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends espeak-ng)
pytest -m "timing and not real_server"  # the real-server tier times itself (45-llama-server.sh)
