#!/usr/bin/env bash
# Slow tier: Ctrl-C at 200 random moments of `pytps run` under a CPU hog (tests/cli/test_sigint_stress.py);
# pytps rank's 20 seeded repeats of two identical emulators (tests/app/test_rank.py).
set -euo pipefail
pytest -m stress
