#!/bin/sh
# fuzz/run.sh [SECONDS] - build the fuzz targets (fuzz/build.sh) and run each for SECONDS
# (default 60) under ASan + UBSan, starting from fuzz/corpus/<target>/. New interesting inputs
# go to build-fuzz/corpus/<target>/ (the checked-in seeds stay as they are). Exits non-zero
# when any target crashes, leaks, hangs (> 10 s on one input) or runs out of memory; the
# reproducer is left in build-fuzz/artifacts/ and its path printed.
#   Reproduce:  build-fuzz/fuzz_page build-fuzz/artifacts/crash-...
#   Environment: FUZZ_TARGETS="page npy npz enuspace router import" to pick targets, FUZZ_JOBS=N to run N
#   processes per target (default 1).
set -u
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-fuzz
"$root/fuzz/build.sh" "$out" >/dev/null || { echo "fuzz/run.sh: build failed" >&2; exit 2; }
mkdir -p "$out/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in ${FUZZ_TARGETS:-page npy npz enuspace router import}; do
    mkdir -p "$out/corpus/$t"
    dict=""
    [ -f "$root/fuzz/$t.dict" ] && dict="-dict=$root/fuzz/$t.dict"
    echo "== fuzz_$t for ${secs}s"
    # shellcheck disable=SC2086
    "$out/fuzz_$t" $dict -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -jobs="${FUZZ_JOBS:-1}" \
        -workers="${FUZZ_JOBS:-1}" -artifact_prefix="$out/artifacts/" \
        "$out/corpus/$t" "$root/fuzz/corpus/$t" >"$out/fuzz_$t.log" 2>&1
    rc=$?
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^Done|ERROR|SUMMARY' \
        "$out/fuzz_$t.log" | head -20
    if [ $rc -ne 0 ]; then
        echo "fuzz_$t FAILED (exit $rc); log: $out/fuzz_$t.log" >&2
        grep -E 'Test unit written to' "$out/fuzz_$t.log" >&2
        status=1
    fi
done
exit $status
