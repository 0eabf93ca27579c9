#!/usr/bin/env bash
# The hostile-server matrix (tests/transport/test_hostile_matrix.py): every misbehaving-server mode
# of tests/hostile.py on every transport, each a whole `pytps run` in a child process, bounded in
# time and peak RSS; prints the table of modes x transports. About 3 minutes on the 2-core VM.
set -euo pipefail
pytest -m hostile -s -p no:randomly tests/transport/test_hostile_matrix.py
