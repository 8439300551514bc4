/*
 * bench_gpu.h - the GPU half of `blockflow bench --device gpu`. bf_bench_main forwards its
 * whole argument vector to bf_bench_gpu_main (bench/bench_gpu.c, argv[0] == "bench"), which
 * hands it to the CUDA backend's bf_bench_gpu_cuda_main (bench/cuda/bench_gpu_cuda.c, inside
 * libblockflow_cuda.so). Both return the process exit code.
 */
#ifndef BF_BENCH_GPU_H
#define BF_BENCH_GPU_H

int bf_bench_gpu_main(int argc, char **argv);
int bf_bench_gpu_cuda_main(int argc, char **argv);

#endif /* BF_BENCH_GPU_H */
