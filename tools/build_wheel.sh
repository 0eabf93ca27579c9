#!/usr/bin/env bash
# Builds a binary wheel of pytps for Linux x86_64 that needs no compiler where it is installed,
# and writes it to OUTDIR (default dist/):
#   bash tools/build_wheel.sh [OUTDIR]
# The compiler is zig's clang (ziglang from PyPI, the `wheel` extra pins it) targeting glibc
# 2.28 (-target x86_64-linux-gnu.2.28), so the module needs nothing newer than glibc 2.28; zig
# links its C++ library (libc++) statically, so no libstdc++ is needed either. `auditwheel
# repair` then checks that and tags the wheel manylinux_2_28 (it fails if the module needs more).
# The wheel has no native TLS (OpenSSL is left out of the build, so nothing to graft in or keep
# up to date): https:// goes through httpx, as on any build without OpenSSL. The epoll backend's
# wait is the ppoll fallback (glibc 2.28 has no epoll_pwait2): the same ns timeouts.
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
    -Ccmake.define.CMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON \
    -Ccmake.define.CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF \
    -Ccmake.define.PYTPS_WERROR=ON \
    -Cbuild-dir="$tmp/build" \
    "$root" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; exit 1; }

PATH="$tmp/venv/bin:$PATH" "$tmp/venv/bin/auditwheel" repair --plat "manylinux_${glibc/./_}_$arch" -w "$tmp/repaired" "$tmp"/raw/*.whl
wheel=$(ls "$tmp"/repaired/*.whl)
"$tmp/venv/bin/auditwheel" show "$wheel"
cp "$wheel" "$out/"
echo "wrote $out/$(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
