#!/usr/bin/env bash
# Cross-compile checks with zig's compiler (ziglang from PyPI, pinned in the `cross` extra):
# every C++ room (core, io, client, emulator, calibration, bindings) for aarch64-macos and
# x86_64-macos with -Wall -Wextra -Werror, and the C++ unit tests linked as macOS executables
# (nothing runs them here: linking proves that every symbol resolves); csrc/core for
# x86_64-windows-gnu. The TLS files compile in their no-OpenSSL form (no macOS OpenSSL headers
# here). The bindings compile for aarch64-macos against this machine's Python headers (below).
# Objects are compiled in parallel (-P jobs). zig's cache (the libc++ it builds per target on
# first use, the slow part) lives in this step's tmp dir unless ZIG_GLOBAL_CACHE_DIR is set,
# so the time CI shows is the cold one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
jobs=${PYTPS_CROSS_JOBS:-2}
export ZIG_GLOBAL_CACHE_DIR=${ZIG_GLOBAL_CACHE_DIR:-$tmp/zig-cache}
export ZIG_LOCAL_CACHE_DIR=$ZIG_GLOBAL_CACHE_DIR

"$py" -m venv "$tmp/venv"
mapfile -t tools < <("$py" -c 'import tomllib; print("\n".join(tomllib.load(open("'"$root"'/pyproject.toml", "rb"))["project"]["optional-dependencies"]["cross"]))')
"$tmp/venv/bin/pip" install -q "${tools[@]}"
"$tmp/venv/bin/python" -m ziglang version
cd "$root"

# One line per compile: target, source. Every object goes to $tmp/obj/<target>/<room>_<name>.o.
plan=$tmp/plan
for target in aarch64-macos x86_64-macos; do
    for src in csrc/{core,io,client,emulator,calibration}/*.cpp tests/cpp/*.cpp; do
        echo "$target $src"
    done
done >"$plan"
for src in csrc/core/*.cpp; do echo "x86_64-windows-gnu $src"; done >>"$plan"
# The bindings, for one macOS target, against this machine's Python and pybind11 headers (a
# Linux pyconfig.h, LP64 like macOS): it checks pytps's code, not a real macOS Python build.
for src in csrc/bindings/*.cpp; do echo "aarch64-macos $src"; done >>"$plan"
pyinc=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
pbinc=$("$tmp/venv/bin/python" -c 'import pybind11; print(pybind11.get_include())')
t0=$SECONDS
zigpy="$tmp/venv/bin/python"
xargs -P "$jobs" -L 1 bash -c '
    target=$0 src=$1
    room=$(basename "$(dirname "$src")"); name=$(basename "$src" .cpp)
    mkdir -p "'"$tmp"'/obj/$target"
    out="'"$tmp"'/obj/$target/${room}_$name"
    "'"$zigpy"'" -m ziglang c++ -target "$target" -std=c++17 -O1 -Wall -Wextra -Werror -I"'"$root"'/csrc" -isystem "'"$pyinc"'" -isystem "'"$pbinc"'" -c "$src" -o "$out.o" 2>"$out.err" \
        || { echo "FAILED: $target $src" >&2; cat "$out.err" >&2; exit 255; }
' <"$plan"
echo "compiled $(wc -l <"$plan") objects ($(grep -c macos "$plan") for macOS, bindings included; $(grep -c windows "$plan") for Windows) in $((SECONDS - t0)) s"

# The C++ tests as macOS executables, from the same objects (each test's sources as the
# pytest file that builds it on this machine lists them).
t0=$SECONDS
# One background job per target (the first link of each builds zig's libc++ for it).
link_all() {
    local target=$1 o=$tmp/obj/$1
    local cxx=("$zigpy" -m ziglang c++ -target "$target" -O1)  # (-O1: no Debug-mode UBSan runtime to build)
    "${cxx[@]}" "$o"/cpp_test_connection*.o "$o"/client_connection*.o "$o"/client_tls.o "$o"/core_*.o -o "$tmp/test_connection-$target"
    "${cxx[@]}" "$o"/cpp_test_json_scan.o "$o"/core_json_scan.o -o "$tmp/test_json_scan-$target"
    "${cxx[@]}" "$o"/cpp_test_stream_recorder.o "$o"/core_*.o -o "$tmp/test_stream_recorder-$target"
}
pids=()
for target in aarch64-macos x86_64-macos; do
    link_all "$target" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for exe in "$tmp"/test_*-*; do
    # Mach-O 64-bit: magic 0xfeedfacf, little-endian on both targets.
    magic=$(od -An -tx1 -N4 "$exe" | tr -d ' ')
    if [[ $magic != cffaedfe ]]; then
        echo "not a macOS executable: $exe (magic $magic)" >&2
        exit 1
    fi
done
echo "linked $(ls "$tmp"/test_*-* | wc -l) C++ test programs as macOS executables in $((SECONDS - t0)) s"
