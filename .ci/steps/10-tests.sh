#!/usr/bin/env bash
# The README's test command, with C++ warnings made errors (CI only; a user's build never is).
# OpenSSL's headers first, so the native client is built with TLS (CMake builds without it otherwise).
set -euo pipefail
dpkg -s libssl-dev >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libssl-dev)
# The voice tests' speech to transcribe (tests/runner/test_voice_run.py; they skip without it).
command -v espeak-ng >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends espeak-ng)
export CMAKE_ARGS="-DPYTPS_WERROR=ON"
pip install -e ".[test]" && pytest
