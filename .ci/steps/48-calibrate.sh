#!/usr/bin/env bash
# Slow tier: `pytps calibrate --quick` as shipped and the full ladder with --baseline, every
# transport (tests/calibrate/test_calibrate_full.py). Needs the `test` extra (the SDK clients, matplotlib).
set -euo pipefail
pytest -m calibrate_full
