/*
 * cuda_none.c - the device probe of a build without the CUDA backend (-DBLOCKFLOW_CUDA=OFF, or
 * no toolkit/cuDNN at configure time): there are never GPUs, and the reason says why.
 */
#include "device.h"

int bf_cuda_probe(bf_device *devs, int cap, char *why, size_t why_size) {
    (void)devs;
    (void)cap;
    bf_strlcpy(why, "built without CUDA", why_size);
    return 0;
}

void bf_cuda_release(bf_device *devs, int n) {
    (void)devs;
    (void)n;
}
