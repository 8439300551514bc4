/*
 * bench_gpu.h - the GPU half of `blockflow bench --device gpu` (bench/bench_gpu.c, written
 * separately). bf_bench_main forwards its whole argument vector here (argv[0] == "bench").
 * Returns the process exit code.
 */
#ifndef BF_BENCH_GPU_H
#define BF_BENCH_GPU_H

int bf_bench_gpu_main(int argc, char **argv);

#endif /* BF_BENCH_GPU_H */
