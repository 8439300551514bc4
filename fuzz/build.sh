#!/bin/sh
# fuzz/build.sh - build the libFuzzer targets with clang (ASan + UBSan), compiling the library
# sources directly (no CMake needed). Usage: fuzz/build.sh [OUTDIR]  (default build-fuzz/)
# Needs clang with libclang_rt.fuzzer (Debian: clang-14 and libclang-rt-14-dev), libuv and
# libcjson development files.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-fuzz}
CC=${CC:-clang}
mkdir -p "$out/obj"
# Objects are reused between builds; any header newer than the last build invalidates them.
stamp="$out/obj/.stamp"
if [ -f "$stamp" ] && [ -n "$(find "$root/include" "$root/runtime" "$root/blocks" -name '*.h' \
        -newer "$stamp")" ]; then
    rm -f "$out"/obj/*.o
fi
flags="-std=c11 -g -O1 -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
       -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -I$root/include -I$root/runtime -I$root/blocks $(pkg-config --cflags libuv libcjson)"
libs="$(pkg-config --libs libuv libcjson) -lpthread -lm"
# The library, once, with coverage instrumentation (fuzzer-no-link) so the fuzzers see it.
objs=""
for src in "$root"/runtime/*.c "$root"/runtime/devices/cuda_loader.c "$root"/blocks/*.c \
           "$root"/blocks/nn_ops/*.c "$root"/blocks/nn_ops/cpu/*.c "$root"/blocks/math_ops/*.c \
           "$root"/blocks/array_ops/*.c "$root"/blocks/state_ops/*.c "$root"/blocks/data_ops/*.c \
           "$root"/blocks/collective_ops/*.c; do
    [ -f "$src" ] || continue
    case "$src" in
    */collective_mpi.c) continue ;; # the fuzzers are one process: collective_mpi_none.c
    *_avx512.c) extra="-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c" ;;
    *_avx2.c) extra="-mavx2 -mfma -mf16c" ;;
    *) extra="" ;;
    esac
    o="$out/obj/$(echo "${src#$root/}" | tr / _).o"
    if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ "$0" -nt "$o" ]; then
        # shellcheck disable=SC2086
        $CC $flags $extra -fsanitize=fuzzer-no-link -c "$src" -o "$o"
    fi
    objs="$objs $o"
done
touch "$stamp"
for t in page npy npz enuspace; do
    # shellcheck disable=SC2086
    $CC $flags -fsanitize=fuzzer "$root/fuzz/fuzz_$t.c" $objs $libs -o "$out/fuzz_$t"
done
# The server's router, JSON bodies and pages folder (apps/server without the lws layer).
srv="$root/apps/server"
# shellcheck disable=SC2086
$CC $flags -D_GNU_SOURCE -I"$srv" -I"$root/apps/enuspace" -fsanitize=fuzzer "$root/fuzz/fuzz_router.c" "$srv/router.c" "$srv/static.c" \
    "$srv/runs.c" "$srv/store.c" "$srv/teach_routes.c" "$srv/import_routes.c" "$srv/reply.c" "$srv/classroom.c" "$srv/train_jobs.c" "$root"/apps/enuspace/*.c \
    $objs $libs -o "$out/fuzz_router"
# The enuSpace importer (apps/enuspace: no runtime inside, the page it writes parsed by it).
enu="$root/apps/enuspace"
# shellcheck disable=SC2086
$CC $flags -I"$enu" -fsanitize=fuzzer "$root/fuzz/fuzz_import.c" "$enu"/*.c $objs $libs \
    -o "$out/fuzz_import"
echo "built $out/fuzz_page $out/fuzz_npy $out/fuzz_npz $out/fuzz_enuspace $out/fuzz_router $out/fuzz_import"
