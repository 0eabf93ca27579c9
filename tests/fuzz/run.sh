#!/usr/bin/env bash
# Builds the libFuzzer harnesses tests/fuzz/fuzz_<target>.cpp against csrc/core (ASan,
# UBSan, LeakSanitizer) into ./fuzz-build/ and runs each for its share of SECONDS.
#
#   tests/fuzz/run.sh SECONDS     (default 60; 0 = build and replay the seed corpus only)
#
# Fails (non-zero exit) on any crash, assertion, sanitizer report, leak or timeout; the
# input that caused it is saved as fuzz-build/artifacts/<target>-crash-* (replay it with
# fuzz-build/fuzz_<target> FILE). Seeds: tests/fuzz/corpus/<target>/; inputs the fuzzer
# finds go to fuzz-build/corpus/<target>/ and are reused by the next run.
#
# Adding a target: write tests/fuzz/fuzz_<name>.cpp (optionally <name>.dict and seeds in
# corpus/<name>/) and add <name> to TARGETS.
set -euo pipefail

TARGETS=(sse json recorder http http_request)

total=${1:-60}
if ! [[ $total =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/fuzz-build
CXX=${CXX:-clang++}
if ! command -v "$CXX" >/dev/null; then
    echo "$CXX not found: install clang (apt-get install clang) or set CXX" >&2
    exit 2
fi

common=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all -I"$root/csrc")
mkdir -p "$out/obj" "$out/artifacts" "$out/logs"

# The core once, instrumented for coverage and the sanitizers; each harness links it.
objs=()
for src in "$root"/csrc/core/*.cpp; do
    obj=$out/obj/$(basename "${src%.cpp}").o
    "$CXX" "${common[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj"
    objs+=("$obj")
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

n=${#TARGETS[@]}
share=$(( (total + n - 1) / n ))
failed=()
for t in "${TARGETS[@]}"; do
    bin=$out/fuzz_$t
    "$CXX" "${common[@]}" -fsanitize=fuzzer,address,undefined "$here/fuzz_$t.cpp" "${objs[@]}" -o "$bin"
    seeds=$here/corpus/$t
    log=$out/logs/$t.log
    if [[ $total -eq 0 ]]; then
        # Replay the seeds once each: a quick check that the harness builds and passes.
        if ! "$bin" "$seeds"/* >"$log" 2>&1; then failed+=("$t"); fi
        echo "fuzz $t: replayed $(ls "$seeds" | wc -l) seeds"
        continue
    fi
    mkdir -p "$out/corpus/$t"
    args=(-max_total_time="$share" -timeout=20 -max_len=16384 -print_final_stats=1
          -detect_leaks=1 -artifact_prefix="$out/artifacts/$t-")
    [[ -f $here/$t.dict ]] && args+=(-dict="$here/$t.dict")
    start=$(date +%s)
    if ! "$bin" "${args[@]}" "$out/corpus/$t" "$seeds" >"$log" 2>&1; then failed+=("$t"); fi
    secs=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz $t: ${runs:-?} runs in ${secs}s, ${rate:-?} exec/s, ${cov:-cov: ?}, corpus $(ls "$out/corpus/$t" | wc -l)"
done

if [[ ${#failed[@]} -gt 0 ]]; then
    for t in "${failed[@]}"; do
        echo "fuzz $t FAILED; the end of $out/logs/$t.log:" >&2
        tail -n 40 "$out/logs/$t.log" >&2
    done
    exit 1
fi
echo "fuzz: all targets passed"
