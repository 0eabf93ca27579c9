#!/usr/bin/env bash
# The event loop's fallback wait: builds pytps as on a glibc without epoll_pwait2
# (-DPYTPS_FORCE_EPOLL_FALLBACK=ON: the loop sleeps in ppoll) into a throwaway venv and build
# dir, checks that the module references no epoll_pwait2 and says "ppoll", and runs the tests
# that drive the event loop (client engine, emulator, end to end) against that build.
# Step 10's editable install is left alone: a --system-site-packages venv would see it (its
# import hook wins over an installed copy), so this venv is a fresh one, and the tests run from
# a copy of tests/ outside the checkout, so that `import pytps` cannot find the source tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q \
    -Cbuild-dir="$tmp/build" \
    -Ccmake.define.PYTPS_FORCE_EPOLL_FALLBACK=ON \
    -Ccmake.define.PYTPS_WERROR=ON \
    "$root[test]"

so=$(ls "$tmp"/venv/lib/python*/site-packages/pytps/_core*.so)
if nm -D --undefined-only "$so" | grep -q epoll_pwait2; then
    echo "the fallback build still references epoll_pwait2:" >&2
    nm -D --undefined-only "$so" | grep epoll_pwait2 >&2
    exit 1
fi

cp -r "$root/tests" "$tmp/tests"
cd "$tmp"
wait_kind=$("$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import sys
import pytps
from pytps import _core
venv = sys.argv[1]
assert pytps.__file__.startswith(venv), f"pytps imported from {pytps.__file__}, not from {venv}"
assert _core.EPOLL_WAIT == "ppoll", f"the fallback build waits with {_core.EPOLL_WAIT}"
print(_core.EPOLL_WAIT)
PY
)
echo "testing the event loop's '$wait_kind' wait (built with PYTPS_FORCE_EPOLL_FALLBACK=ON)"
"$tmp/venv/bin/python" - <<'PY'
from pytps import _core
for spin in (60_000, 0):
    r = _core._event_loop_probe(300_000, 200, spin)
    late = sorted(r["late_ns"])
    print(f"  {r['wait']}, spin {spin // 1000} us: {r['sleeps'] / 200:.2f} sleeps and {r['polls'] / 200:.2f} wait calls"
          f" per 300 us deadline, late p50 {late[100] / 1e3:.1f} us, p90 {late[180] / 1e3:.1f} us")
PY
# The default tier only (the copy of tests/ has no pyproject.toml to say so): timing tests need a
# quiet machine and have a step of their own.
PYTPS_EXPECT_EPOLL_WAIT=ppoll "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider -m "not timing and not stress" \
    tests/transport/test_event_loop.py tests/transport/test_client_engine.py tests/emulator/test_emulator_*.py tests/runner/test_run_e2e.py
echo "tested the event loop's '$wait_kind' wait"
