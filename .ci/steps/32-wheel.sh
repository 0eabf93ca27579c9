#!/usr/bin/env bash
# The Linux binary wheel: tools/build_wheel.sh builds it (zig, glibc 2.28, libc++ and OpenSSL
# static) and auditwheel places it at manylinux_2_28; it is installed into a fresh venv with no C or
# C++ compiler on PATH (stand-ins that fail come first), `pytps run --concurrency 8` runs with
# zero errors against the built-in emulator, and the default tier (step 10's tests) runs against
# the installed wheel (with the compiler back on PATH, for the C++ unit tests). The tests run from a copy of the tracked files whose pytps/ is a link to the
# installed package (so tests that read the package read the wheel's; csrc/ is there for the
# C++ tests, which compile from source), and the pytest console script keeps the copy off
# sys.path: `import pytps` can only find the wheel.
# glibc 2.28 has no epoll_pwait2, so the wheel's loops sleep in the epoll backend's ppoll
# fallback: this step is also the check that the fallback builds, references no epoll_pwait2,
# and keeps sub-millisecond deadlines (the old epoll-fallback step's job).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}

# OpenSSL's static libraries, linked into the wheel for its native TLS (step 10 installs them too).
dpkg -s libssl-dev >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libssl-dev)
bash "$root/tools/build_wheel.sh" "$tmp/wheelhouse"
wheel=$(ls "$tmp"/wheelhouse/*.whl)
case $(basename "$wheel") in
    *manylinux_2_28_x86_64*.whl | *manylinux_2_2[0-7]_x86_64*.whl | *manylinux_2_1[0-9]_x86_64*.whl | *manylinux2014_x86_64*.whl) ;;
    *) echo "not a manylinux_2_28-or-older wheel: $(basename "$wheel")" >&2; exit 1 ;;
esac

# No compiler: cc, c++, gcc, g++, clang, clang++ and the like fail, first on PATH.
mkdir "$tmp/nocc"
for c in cc c++ gcc g++ clang clang++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ cmake ninja; do
    printf '#!/bin/sh\necho "%s: no compiler in this step" >&2\nexit 127\n' "$c" >"$tmp/nocc/$c"
    chmod +x "$tmp/nocc/$c"
done
"$py" -m venv "$tmp/venv"
path=$PATH
export PATH="$tmp/nocc:$tmp/venv/bin:$path"
pip install -q --only-binary pytps "$wheel[test]"

so=$(ls "$tmp"/venv/lib/python*/site-packages/pytps/_core*.so)
if nm -D --undefined-only "$so" | grep -q epoll_pwait2; then
    echo "the wheel references epoll_pwait2 (glibc >= 2.35):" >&2
    exit 1
fi
# Native TLS with OpenSSL inside the module: no libssl or libcrypto needed, none of their symbols
# exported (Python's ssl loads its own OpenSSL beside it).
if ldd "$so" | grep -E 'libssl|libcrypto' || nm -D --defined-only "$so" | grep -E ' (SSL|EVP|OPENSSL)_'; then
    echo "the wheel's module needs or exports OpenSSL (above)" >&2
    exit 1
fi
mkdir "$tmp/src"
(cd "$root" && git ls-files -z | grep -zv '^pytps/' | xargs -0 tar -cf - ) | tar -xf - -C "$tmp/src"
ln -s "$(dirname "$so")" "$tmp/src/pytps"
cd "$tmp"  # (away from the checkout, whose pytps/ would be imported instead of the wheel's)
python -c 'from pytps import _core; assert _core.TLS_AVAILABLE and _core.TLS_BUNDLED; print("native TLS:", _core.tls_library_version(), "(linked in)")'
python "$root/.ci/check_event_loop.py" "$tmp/venv" epoll/ppoll
pytps run --concurrency 8 --requests 200 --max-error-rate 0 --out "$tmp/run" >"$tmp/run.log" || {
    cat "$tmp/run.log" >&2
    exit 1
}
tail -n 3 "$tmp/run.log"

# The tests may compile (the C++ unit tests build from csrc/ with the machine's compiler).
export PATH="$tmp/venv/bin:$path"
cd "$tmp/src"
# The tests that drive the native module (parsers, client engine, emulator, runs, embedding), on
# two workers (pytest-xdist): this build differs from step 10's in its native code only, and step
# 10's whole default tier run twice more took CI towards its 90-minute limit (about 10 minutes a
# repeat on a quiet machine). PYTPS_PYTEST_ARGS replaces the arguments (`-n 2 tests` for all).
PYTPS_EXPECT_EVENT_WAIT=epoll/ppoll pytest -q -p no:cacheprovider ${PYTPS_PYTEST_ARGS:--n 2 tests/core tests/transport tests/emulator tests/runner tests/embed tests/test_build.py}
echo "tested the wheel $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
