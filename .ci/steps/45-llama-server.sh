#!/usr/bin/env bash
# Real-server tier: pytps against llama.cpp's llama-server with a tiny random model made in the
# test (tests/real_servers/, docs/real-servers.md). The first run on a machine builds llama-server
# from the pinned llama-cpp-python sdist (minutes) into ~/.cache/pytps/llama-server-<version>/;
# later runs reuse it. Needs cmake and a C++ compiler (as pytps's own build does) and PyPI.
set -euo pipefail
# gguf (the model writer) is in the test extra that step 10 installed; a run of this step alone
# installs it here.
python -c "import gguf" 2>/dev/null || pip install -q "gguf"
# The build reads the sdist's metadata without build isolation: its backend must be here (a
# fresh venv has none; the machine's base Python has it).
python -c "import scikit_build_core" 2>/dev/null || pip install -q "scikit-build-core"
t0=$SECONDS
python tests/real_servers/build_llama_server.py
echo "llama-server ready in $((SECONDS - t0)) s (a warm cache: ~0 s)"
# -s: the tests print pytps's figures beside the server's (TPOT per request, errors under load).
pytest -s -m real_server tests/real_servers
