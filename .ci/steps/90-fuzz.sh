#!/usr/bin/env bash
# The fuzzers (libFuzzer + ASan/UBSan/LSan need clang); any crash, report or leak fails CI.
# 60 s per target (tests/fuzz/run.sh --list), one per core at a time: about 3 minutes plus the build.
set -euo pipefail
if ! command -v clang++ >/dev/null; then
    apt-get update -qq && apt-get install -y -qq clang
    # The sanitizer/libFuzzer runtimes are only "recommended" by clang on Debian 12.
    apt-get install -y -qq libclang-rt-dev 2>/dev/null || true
fi
tests/fuzz/run.sh --per-target 60
