#!/usr/bin/env bash
# Builds a binary wheel of pytps for Linux x86_64 that needs no compiler where it is installed,
# and writes it to OUTDIR (default dist/):
#   bash tools/build_wheel.sh [OUTDIR]
# The compiler is zig's clang (ziglang from PyPI, the `wheel` extra pins it) targeting glibc
# 2.28 (-target x86_64-linux-gnu.2.28), so the module needs nothing newer than glibc 2.28; zig
# links its C++ library (libc++) statically, so no libstdc++ is needed either. `auditwheel
# repair` then checks that and tags the wheel manylinux_2_28 (it fails if the module needs more).
# Native TLS: this machine's OpenSSL static libraries (Debian's libssl-dev: libssl.a,
# libcrypto.a) are linked into the module with their symbols hidden (-DPYTPS_OPENSSL_STATIC=ON),
# so the wheel needs no OpenSSL where it is installed and never clashes with the one Python's ssl
# loads; only their headers are put on the include path (glibc's stay zig's 2.28 ones), and
# auditwheel checks that nothing they call is newer than glibc 2.28. Its CA store is the one
# Python's ssl finds on the user's machine (_core.TLS_BUNDLED). The OpenSSL version is this
# machine's at build time: rebuild the wheel for its security fixes. PYTPS_WHEEL_TLS=0 builds a
# wheel without native TLS (https:// then goes through httpx). The epoll backend's wait is the
# ppoll fallback (glibc 2.28 has no epoll_pwait2): the same ns timeouts.
# No LTO (CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF stops pybind11 adding -flto): with -flto zig
# builds a second libc++ from source, minutes on a cold cache, for no measurable gain here.
# The wheel is for the Python that runs this script (its version's ABI tag).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
glibc=2.28
arch=$(uname -m)
if [[ $arch != x86_64 ]]; then
    echo "tools/build_wheel.sh builds x86_64 wheels (this machine is $arch): use cibuildwheel (pyproject.toml)" >&2
    exit 2
fi

tls_defines=(-Ccmake.define.CMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON)
if [[ ${PYTPS_WHEEL_TLS:-1} != 0 ]]; then
    libdir=/usr/lib/$arch-linux-gnu
    if [[ ! -f $libdir/libssl.a || ! -f $libdir/libcrypto.a || ! -f /usr/include/openssl/ssl.h ]]; then
        echo "tools/build_wheel.sh: native TLS needs OpenSSL's static libraries and headers: apt-get install libssl-dev (or PYTPS_WHEEL_TLS=0 for a wheel without native TLS)" >&2
        exit 2
    fi
    mkdir -p "$tmp/openssl-include"
    cp -r /usr/include/openssl "$tmp/openssl-include/"
    cp /usr/include/$arch-linux-gnu/openssl/*.h "$tmp/openssl-include/openssl/" 2>/dev/null || true
    tls_defines=(
        -Ccmake.define.PYTPS_OPENSSL_STATIC=ON
        -Ccmake.define.OPENSSL_INCLUDE_DIR="$tmp/openssl-include"
        -Ccmake.define.OPENSSL_SSL_LIBRARY="$libdir/libssl.a"
        -Ccmake.define.OPENSSL_CRYPTO_LIBRARY="$libdir/libcrypto.a"
    )
fi

"$py" -m venv "$tmp/venv"
mapfile -t tools < <("$py" -c 'import tomllib, sys; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["wheel"]))' "$root/pyproject.toml")
"$tmp/venv/bin/pip" install -q "${tools[@]}"

# CMake wants a compiler it can run by name: two wrappers around `python -m ziglang`.
mkdir "$tmp/bin"
for tool in cc c++; do
    cat >"$tmp/bin/zig-$tool" <<SH
#!/bin/sh
exec "$tmp/venv/bin/python" -m ziglang $tool -target $arch-linux-gnu.$glibc "\$@"
SH
    chmod +x "$tmp/bin/zig-$tool"
done
export ZIG_GLOBAL_CACHE_DIR=${ZIG_GLOBAL_CACHE_DIR:-$tmp/zig-cache}
export ZIG_LOCAL_CACHE_DIR=$ZIG_GLOBAL_CACHE_DIR
unset CMAKE_ARGS  # (a developer's launcher or flags are not this wheel's)
CC="$tmp/bin/zig-cc" CXX="$tmp/bin/zig-c++" "$tmp/venv/bin/python" -m build -q --wheel --outdir "$tmp/raw" \
    "${tls_defines[@]}" \
    -Ccmake.define.CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
    -Ccmake.define.PYTPS_WERROR=ON \
    -Cbuild-dir="$tmp/build" \
    "$root" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; exit 1; }

PATH="$tmp/venv/bin:$PATH" "$tmp/venv/bin/auditwheel" repair --plat "manylinux_${glibc/./_}_$arch" -w "$tmp/repaired" "$tmp"/raw/*.whl
wheel=$(ls "$tmp"/repaired/*.whl)
"$tmp/venv/bin/auditwheel" show "$wheel"
cp "$wheel" "$out/"
echo "wrote $out/$(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
