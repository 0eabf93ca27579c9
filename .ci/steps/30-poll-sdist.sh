#!/usr/bin/env bash
# The portable event backend, built from the sdist: `python -m build --sdist`, a check that the
# sdist holds every file git tracks (nothing a build, a test or a doc needs is missing), then
# `pip install` from it into a fresh venv with -DPYTPS_EVENT_BACKEND=poll (poll() and a
# self-pipe, what macOS and other POSIX systems build), `pytps run --concurrency 8` with zero
# errors, and the default tier (step 10's tests) runs from the unpacked sdist against that build
# (the C++ tests included: they compile from the sdist's csrc/; its pytps/ is replaced by a link to the
# installed package, see below).
# The epoll backend's ppoll fallback (-DPYTPS_FORCE_EPOLL_FALLBACK=ON, as on a glibc without
# epoll_pwait2) is what the manylinux wheel builds (glibc 2.28): step 32 tests it.
# Step 10's editable install is left alone: this venv is a fresh one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}

"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q build
"$tmp/venv/bin/python" -m build -q --sdist --outdir "$tmp/dist" "$root" >/dev/null
sdist=$(ls "$tmp"/dist/pytps-*.tar.gz)
echo "sdist: $(basename "$sdist"), $(du -k "$sdist" | cut -f1) KiB"
mkdir "$tmp/src"
tar -xzf "$sdist" -C "$tmp/src" --strip-components=1
missing=$(cd "$root" && git ls-files | while read -r f; do [[ -e "$tmp/src/$f" ]] || echo "$f"; done)
if [[ -n $missing ]]; then
    echo "the sdist lacks files git tracks:" >&2
    echo "$missing" >&2
    exit 1
fi

"$tmp/venv/bin/pip" install -q \
    -Cbuild-dir="$tmp/build" \
    -Ccmake.define.PYTPS_EVENT_BACKEND=poll \
    -Ccmake.define.PYTPS_WERROR=ON \
    "$sdist[test]"

so=$(ls "$tmp"/venv/lib/python*/site-packages/pytps/_core*.so)
if nm -D --undefined-only "$so" | grep -E 'epoll|eventfd'; then
    echo "the poll build still references epoll or eventfd (above)" >&2
    exit 1
fi
cd "$tmp"
"$tmp/venv/bin/python" "$root/.ci/check_event_loop.py" "$tmp/venv" poll/ppoll
# Zero errors: --max-error-rate 0 exits 4 at the first failed request.
"$tmp/venv/bin/pytps" run --concurrency 8 --requests 200 --max-error-rate 0 --out "$tmp/run" >"$tmp/run.log" || {
    cat "$tmp/run.log" >&2
    exit 1
}
tail -n 3 "$tmp/run.log"

# Tests start `python -m pytps` in child processes, from the tree they run in: the sdist's
# pytps/ becomes a link to the installed package, so that every import finds this build.
rm -rf "$tmp/src/pytps"
ln -s "$(dirname "$so")" "$tmp/src/pytps"
cd "$tmp/src"
# The tests that drive the native module (parsers, client engine, emulator, runs, embedding), on
# two workers (pytest-xdist): this build differs from step 10's in its native code only, and step
# 10's whole default tier run twice more took CI towards its 90-minute limit (about 10 minutes a
# repeat on a quiet machine). PYTPS_PYTEST_ARGS replaces the arguments (`-n 2 tests` for all).
PYTPS_EXPECT_EVENT_WAIT=poll/ppoll "$tmp/venv/bin/pytest" -q -p no:cacheprovider ${PYTPS_PYTEST_ARGS:--n 2 tests/core tests/transport tests/emulator tests/runner tests/embed tests/test_build.py}
echo "tested the poll backend (built from the sdist)"
