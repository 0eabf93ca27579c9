#!/usr/bin/env bash
# Builds the libFuzzer harnesses tests/fuzz/fuzz_<target>.cpp against csrc/ (ASan, UBSan,
# LeakSanitizer) into ./fuzz-build/ and runs them.
#
#   tests/fuzz/run.sh --per-target SECONDS [TARGET...]   each target SECONDS (CI: 60)
#   tests/fuzz/run.sh SECONDS [TARGET...]                SECONDS in total, split evenly
#   tests/fuzz/run.sh 0 [TARGET...]                      build and replay the seed corpus only
#   tests/fuzz/run.sh --list                             the targets
#
# Without TARGETs, all of them. Fails (non-zero exit) on any crash, assertion, sanitizer
# report, leak or timeout; the input that caused it is saved as
# fuzz-build/artifacts/<target>-crash-* (replay it with fuzz-build/fuzz_<target> FILE).
# Seeds: tests/fuzz/corpus/<target>/; inputs the fuzzer finds go to
# fuzz-build/corpus/<target>/ and are reused by the next run.
set -euo pipefail

# One line per target: "NAME [ROOM...] [FLAG...]". The harness is tests/fuzz/fuzz_NAME.cpp,
# linked against csrc/core/*.cpp and csrc/<ROOM>/*.cpp for each ROOM listed; FLAGs (words
# starting with -) are added to its compile and link (e.g. -lssl). Optional:
# tests/fuzz/NAME.dict and seeds in tests/fuzz/corpus/NAME/. Adding a target is one line here.
TARGETS=(
    "sse"
    "json"
    "recorder"
    "http"
    "http_request"
    "connection"
)

usage() {
    sed -n '5,8s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

per_target=0
case ${1:-} in
    --per-target)
        [[ ${2:-} =~ ^[0-9]+$ ]] || usage
        per_target=1
        seconds=$2
        shift 2
        ;;
    --list)
        for line in "${TARGETS[@]}"; do echo "${line%% *}"; done
        exit 0
        ;;
    "") seconds=60 ;;
    *)
        [[ $1 =~ ^[0-9]+$ ]] || usage
        seconds=$1
        shift
        ;;
esac

# The target lines selected by name (all when none is given).
selected=()
if [[ $# -eq 0 ]]; then
    selected=("${TARGETS[@]}")
else
    for want in "$@"; do
        found=
        for line in "${TARGETS[@]}"; do
            if [[ ${line%% *} == "$want" ]]; then
                selected+=("$line")
                found=1
            fi
        done
        [[ -n $found ]] || { echo "unknown fuzz target '$want'; targets: $("$0" --list | tr '\n' ' ')" >&2; exit 2; }
    done
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

# Each room once, instrumented for coverage and the sanitizers; the harnesses link them.
declare -A room_objs=()
build_room() {
    local room=$1 src obj objs=()
    [[ -n ${room_objs[$room]+x} ]] && return
    [[ -d $root/csrc/$room ]] || { echo "no room csrc/$room" >&2; exit 2; }
    mkdir -p "$out/obj/$room"
    for src in "$root/csrc/$room"/*.cpp; do
        obj=$out/obj/$room/$(basename "${src%.cpp}").o
        "$CXX" "${common[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj"
        objs+=("$obj")
    done
    room_objs[$room]="${objs[*]}"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

n=${#selected[@]}
if [[ $per_target -eq 1 ]]; then
    share=$seconds
else
    share=$(( (seconds + n - 1) / n ))
fi
# Build every harness first (one at a time: they share the rooms' objects), then run them
# FUZZ_JOBS at a time (default: one per core). Each target gets its full share of time either
# way; on CI's two cores this halves the step's wall time without fuzzing any target less.
bins=()
for line in "${selected[@]}"; do
    read -r -a words <<<"$line"
    t=${words[0]}
    rooms=(core)
    flags=()
    for w in "${words[@]:1}"; do
        if [[ $w == -* ]]; then flags+=("$w"); else rooms+=("$w"); fi
    done
    objs=()
    for room in "${rooms[@]}"; do
        build_room "$room"
        read -r -a more <<<"${room_objs[$room]}"
        objs+=("${more[@]}")
    done
    bin=$out/fuzz_$t
    "$CXX" "${common[@]}" -fsanitize=fuzzer,address,undefined "$here/fuzz_$t.cpp" "${objs[@]}" -pthread \
        "${flags[@]}" -o "$bin"
    bins+=("$t")
done

# One target's run: its line of figures goes to logs/NAME.msg, and logs/NAME.failed marks a failure.
run_target() {
    local t=$1 bin=$out/fuzz_$1 log=$out/logs/$1.log seeds=() start secs runs rate cov msg
    rm -f "$out/logs/$t.failed" "$out/logs/$t.msg"
    [[ -d $here/corpus/$t ]] && seeds=("$here/corpus/$t")
    if [[ $share -eq 0 ]]; then
        # Replay the seeds once each (or, without seeds, 100 generated inputs): a quick check
        # that the harness builds and passes.
        if [[ ${#seeds[@]} -gt 0 ]]; then
            "$bin" "${seeds[0]}"/* >"$log" 2>&1 || touch "$out/logs/$t.failed"
            echo "fuzz $t: replayed $(ls "${seeds[0]}" | wc -l) seeds" >"$out/logs/$t.msg"
        else
            "$bin" -runs=100 >"$log" 2>&1 || touch "$out/logs/$t.failed"
            echo "fuzz $t: no seeds, ran 100 inputs" >"$out/logs/$t.msg"
        fi
        return
    fi
    mkdir -p "$out/corpus/$t"
    local args=(-max_total_time="$share" -timeout=20 -max_len=16384 -print_final_stats=1
                -detect_leaks=1 -artifact_prefix="$out/artifacts/$t-")
    [[ -f $here/$t.dict ]] && args+=(-dict="$here/$t.dict")
    start=$(date +%s)
    "$bin" "${args[@]}" "$out/corpus/$t" "${seeds[@]}" >"$log" 2>&1 || touch "$out/logs/$t.failed"
    secs=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    msg="fuzz $t: ${runs:-?} runs in ${secs}s, ${rate:-?} exec/s, ${cov:-cov: ?}, corpus $(ls "$out/corpus/$t" | wc -l)"
    echo "$msg" >"$out/logs/$t.msg"
}

jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "FUZZ_JOBS must be a positive integer, not '$jobs'" >&2; exit 2; }
running=0
for t in "${bins[@]}"; do
    if [[ $running -ge $jobs ]]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_target "$t" &
    running=$((running + 1))
done
wait

failed=()
summary=()
for t in "${bins[@]}"; do
    [[ -f $out/logs/$t.failed ]] && failed+=("$t")
    if [[ -f $out/logs/$t.msg ]]; then
        msg=$(cat "$out/logs/$t.msg")
        echo "$msg"
        summary+=("$msg")
    else
        failed+=("$t")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    for t in "${failed[@]}"; do
        echo "fuzz $t FAILED; the end of $out/logs/$t.log:" >&2
        tail -n 40 "$out/logs/$t.log" >&2
    done
    exit 1
fi
if [[ ${#summary[@]} -gt 1 ]]; then
    echo "fuzz summary:"
    printf '  %s\n' "${summary[@]}"
fi
echo "fuzz: all targets passed"
