#!/usr/bin/env bash
# gpu_lease.sh - run the GPU tests and the GPU benchmark on a borrowed GPU machine that has the
# CUDA driver and cuDNN but none of our build dependencies (libuv, cJSON, Check).
#
#   bench/gpu_lease.sh pack        here: build build-gpu (CUDA on) and copy what the GPU machine
#                                  needs (programs, the CUDA backend libblockflow_cuda.so, ctest
#                                  files, libuv/cJSON/subunit) into .gpu/
#   bench/gpu_lease.sh run [WHAT]  there, from the repository root, with .gpu/ carried along:
#                                  WHAT is any of: tests examples bench gradcheck train sanitize
#                                  (default: tests examples bench). Logs and tables go to $OUT (or ./gpu-out).
#
# The build folder's ctest files name absolute paths of this checkout; `run` recreates them
# with a symbolic link when the GPU machine's copy of the repository lives elsewhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

pack() {
    # Open MPI off: the GPU machine has no libmpi (the collective layer is then one process)
    cmake -S . -B build-gpu -DBLOCKFLOW_CUDA=ON -DBLOCKFLOW_MPI=OFF -DCMAKE_BUILD_TYPE=Release -DBLOCKFLOW_WERROR=ON \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
    # only what travels: the program, the backend it loads, the GPU tests, and the loader's
    # test (its real-backend case then probes a real GPU) with its stand-in backend
    local gpu_tests
    gpu_tests=$(find tests -name 'test_*_gpu.c' -exec basename {} .c \; | sort)
    # shellcheck disable=SC2086
    cmake --build build-gpu -j"$(nproc)" --target blockflow_cli blockflow_cuda $gpu_tests \
        test_cuda_loader bf_fake_cuda_backend >/dev/null
    rm -rf .gpu && mkdir -p .gpu/lib
    echo "$root" >.gpu/origin
    # The program, the CUDA backend it loads (beside it; the GPU tests are told its path by
    # ctest), the GPU tests, test_cuda_loader and the ctest files only (ctest -L gpu runs the
    # GPU tests; test_cuda_loader is run by name).
    test -f build-gpu/libblockflow_cuda.so || { echo "build-gpu has no libblockflow_cuda.so (CUDA off?)" >&2; exit 1; }
    mkdir -p .gpu/build-gpu
    (cd build-gpu && find . -name CMakeFiles -prune -o \( -type f \( -name blockflow -o -name libblockflow_cuda.so -o -name 'test_*_gpu' -o -name test_cuda_loader -o -name libbf_fake_cuda_backend.so -o -name 'CTestTestfile.cmake' \) \) -print | tar -cf - -T - | tar -xf - -C ../.gpu/build-gpu)
    for l in libuv.so.1 libcjson.so.1 libsubunit.so.0 libwebsockets.so.17 libssl.so.3 libcrypto.so.3 libcap.so.2; do
        cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')" .gpu/lib/
    done
    local exclude # (a worktree's .git is a file: ask git where info/exclude is)
    exclude=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
    du -sh .gpu
}

# Library folders for libcudart, cuDNN (often inside Python's nvidia-* packages), NVRTC, cuBLAS.
gpu_libs() {
    local dirs
    dirs=$(find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcudart.so.1[0-9]' -o -name 'libnvrtc.so.1[0-9]' \
        -o -name 'libcublasLt.so.1[0-9]' \) -not -path '/proc/*' 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
    echo "$root/.gpu/lib${dirs:+:$dirs}"
}

run() {
    local out=${OUT:-$root/gpu-out}
    mkdir -p "$out"
    local origin
    origin=$(cat .gpu/origin)
    if [ "$origin" != "$root" ] && [ ! -e "$origin" ]; then
        mkdir -p "$(dirname "$origin")" && ln -s "$root" "$origin"
    fi
    [ -e build-gpu ] || ln -s .gpu/build-gpu build-gpu
    export LD_LIBRARY_PATH
    LD_LIBRARY_PATH=$(gpu_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    local what=${*:-tests examples bench}
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" | tee -a "$out/gpu.txt"
    # The CUDA backend must load and find the GPU (else everything would quietly run on the
    # CPU): a page with --device gpu fails otherwise, saying why.
    if ! build-gpu/blockflow run examples/filter_grad_same.json --device gpu --out /tmp/bf-gpu-probe \
        >/dev/null 2>"$out/gpu_probe.txt"; then
        cat "$out/gpu_probe.txt" >&2
        echo "gpu_lease: no GPU for blockflow (see above)" >&2
        return 1
    fi
    echo "repository: $root (built at $origin)"
    local rc=0
    for w in $what; do
        case $w in
        tests)
            (cd build-gpu && timeout 300 ctest -L gpu --output-on-failure --timeout 280) 2>&1 | tee "$out/ctest_gpu.log" || rc=1
            (cd build-gpu && timeout 60 ctest -R '^test_cuda_loader$' -V --timeout 50) 2>&1 | tee -a "$out/ctest_gpu.log" || rc=1
            ;;
        examples)
            local ex=/tmp/bf-examples
            rm -rf "$ex"
            # Every example page on the CPU and on the GPU; the outputs must agree.
            for p in examples/*.json; do
                n=$(basename "$p" .json)
                mkdir -p "$ex/cpu/$n" "$ex/gpu/$n"
                build-gpu/blockflow run "$p" --device cpu --out "$ex/cpu/$n" >/dev/null
                echo "== $n on the GPU"
                build-gpu/blockflow run "$p" --device gpu --out "$ex/gpu/$n" || echo "$n: GPU run FAILED"
            done 2>&1 | tee "$out/examples.log"
            python3 - "$ex" <<'EOF' 2>&1 | tee -a "$out/examples.log" || rc=1
import glob, os, sys
import numpy as np
base, bad = sys.argv[1], 0
for c in sorted(glob.glob(f"{base}/cpu/*/*.npy")):
    g = c.replace("/cpu/", "/gpu/", 1)
    a, b = np.load(c), (np.load(g) if os.path.exists(g) else None)
    if b is None or a.shape != b.shape:
        print(f"{g}: missing or wrong shape"); bad += 1; continue
    # Pages that measure rounding (finite differences, relative errors) are compared by what
    # they are for: both below 1e-6.
    if c.endswith(("/error.npy", "/finite_difference.npy")) and "fd_check" in c:
        ok = np.abs(b).max() < 1e-6 if c.endswith("/error.npy") else True
        print(f"{os.path.relpath(c, base)[4:]:60s} gpu {b.ravel()[:1]} cpu {a.ravel()[:1]} {'ok' if ok else 'DIFFERS'}")
        bad += not ok; continue
    tol = 1e-12 if a.dtype == np.float64 else 1e-5
    a, b = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)
    ok = err < tol
    print(f"{os.path.relpath(c, base)[4:]:60s} max|cpu-gpu|/max|cpu| = {err:.2e} (tol {tol:g}) {'ok' if ok else 'DIFFERS'}")
    bad += not ok
sys.exit(1 if bad else 0)
EOF
            ;;
        bench)
            for dt in float32 float16; do
                timeout 150 build-gpu/blockflow bench --device gpu --dtype $dt --rounds 20 2>&1 | tee "$out/bench_gpu_$dt.txt" || rc=1
            done
            ;;
        gradcheck)
            # every gradient block of the examples on the CPU and on the GPU, side by side
            for p in examples/*.json examples/teach/*.json; do
                for b in $(python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print(' '.join(x['id'] for x in p['blocks'] if 'Backprop' in x['type']))" "$p"); do
                    echo "== $p $b"
                    build-gpu/blockflow gradcheck "$p" "$b" --gpu --json || echo "$p $b: FAILED"
                done
            done 2>&1 | tee "$out/gradcheck_gpu.log"
            ;;
        train)
            # the training examples: the convolutions on the GPU (auto) against the CPU, the
            # same number of steps; the final Variables must agree to float32 rounding
            for n in learn_a_filter digits_cnn; do
                for d in cpu gpu; do
                    echo "== $n on $d"
                    build-gpu/blockflow train examples/train/$n.json --steps 200 --device $d \
                        --checkpoint "/tmp/bf-train-$n-$d.npz" --json --quiet
                done
            done 2>&1 | tee "$out/train_gpu.log"
            python3 - "$out" <<'EOF2' 2>&1 | tee -a "$out/train_gpu.log" || rc=1
import sys
import numpy as np
out, bad = sys.argv[1], 0
for n in ("learn_a_filter", "digits_cnn"):
    c, g = np.load(f"/tmp/bf-train-{n}-cpu.npz"), np.load(f"/tmp/bf-train-{n}-gpu.npz")
    for k in c.files:
        a, b = c[k].astype(np.float64), g[k].astype(np.float64)
        err = np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)
        ok = err < 1e-3
        print(f"{n} {k:20s} max|cpu-gpu|/max|cpu| after 200 steps = {err:.2e} {'ok' if ok else 'DIFFERS'}")
        bad += not ok
sys.exit(1 if bad else 0)
EOF2
            ;;
        sanitize)
            # compute-sanitizer on a short run of the GPU test (no fork: Check runs in-process).
            CK_FORK=no BF_GPU_TEST_CASES=12 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
                build-gpu/tests/test_conv_gpu 2>&1 | tail -40 | tee "$out/sanitize.log" || rc=1
            ;;
        esac
    done
    return $rc
}

case ${1:-} in
pack) pack ;;
run) shift; run "$@" ;;
*) sed -n 2,12p "$0"; exit 2 ;;
esac
