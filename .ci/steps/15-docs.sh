#!/usr/bin/env bash
# The docs run (docs/docs-tests.md): every ```sh and ```python block of README.md and docs/*.md,
# from a folder outside the checkout, against a `pytps serve` on 127.0.0.1. Three workers that steal
# work: a doc mostly waits on its runs (user CPU ~100 s of 540 s serial), and voice.md alone takes
# ~3 minutes of real-time audio, so the step is about 4 minutes instead of 9.
set -euo pipefail
# docs/voice.md makes speech to transcribe with espeak-ng (Debian's): installed when missing.
if ! command -v espeak-ng >/dev/null; then
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends espeak-ng
fi
python -c 'import jiwer' 2>/dev/null || pip install -q "jiwer>=3"
# docs/voice.md's compressed speech (mp3) is encoded and decoded by PyAV (the test extra has it).
python -c 'import av' 2>/dev/null || pip install -q "av>=14"
pytest tests/docs -q -n 3 --dist worksteal
