/*
 * bench_gpu.c - `blockflow bench --device gpu` in the program: the benchmark itself times CUDA
 * and cuDNN calls, so it lives in the CUDA backend (bench/cuda/bench_gpu_cuda.c, inside
 * libblockflow_cuda.so); this loads the backend and hands it the arguments. Without CUDA in
 * the build, or without the backend or the CUDA libraries, it prints "no GPU: <reason>" and
 * returns 2.
 */
#include "bench_gpu.h"

#include "devices/cuda_api.h"

#include <stdio.h>

int bf_bench_gpu_main(int argc, char **argv) {
    char why[256] = "";
    const bf_cuda_api_v1 *api = bf_cuda_backend(why, sizeof why);
    if (!api) {
        printf("no GPU: %s\n", why);
        return 2;
    }
    return api->bench(argc, argv);
}
