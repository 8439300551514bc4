/*
 * conv_gemm_generic.c - portable C instantiation of the convolution kernels
 * (conv_gemm_impl.h), for CPUs without AVX2. The 4 x 16 (f32) / 4 x 8 (f64) microkernel is
 * plain loops over a small accumulator tile that the compiler vectorises for the baseline
 * target (SSE2 on x86-64).
 */
#include "conv_cpu_internal.h"

#include <string.h>

#define BF_VEC_BYTES 16 /* channel vectors of the depthwise loops */

/* A is packed in blocks of KB reduction steps: a[(k / KB) * MR * KB + i * KB + k % KB]. */
#define BF_GENERIC_UKR(NAME, TT, KB)                                                           \
    static void NAME(int64_t kc, const TT *restrict a, const TT *restrict b, TT *const *crow,  \
                     int64_t coff, int mr, int nr, int acc) {                                  \
        TT c[MR][NR] = {{0}};                                                                  \
        for (int64_t k = 0; k < kc; k++) {                                                     \
            const TT *ak = a + (k / KB) * MR * KB + k % KB;                                    \
            for (int i = 0; i < MR; i++)                                                       \
                for (int j = 0; j < NR; j++) c[i][j] += ak[i * KB] * b[k * NR + j];            \
        }                                                                                      \
        for (int i = 0; i < mr; i++)                                                           \
            for (int j = 0; j < nr; j++)                                                       \
                crow[i][coff + j] = acc ? crow[i][coff + j] + c[i][j] : c[i][j];               \
    }

#define T float
#define MR 4
#define NR 16
BF_GENERIC_UKR(ukr1_generic_f32, float, 1)
BF_GENERIC_UKR(ukrb_generic_f32, float, 4)
#define UKR ukr1_generic_f32
#define UKRB ukrb_generic_f32
#define AKB 4
#define BF_ISA generic_f32
#include "conv_gemm_impl.h"
#undef UKR
#undef UKRB
#undef AKB
#undef BF_ISA
#undef T
#undef MR
#undef NR

#define T double
#define MR 4
#define NR 8
BF_GENERIC_UKR(ukr1_generic_f64, double, 1)
BF_GENERIC_UKR(ukrb_generic_f64, double, 4)
#define UKR ukr1_generic_f64
#define UKRB ukrb_generic_f64
#define AKB 4
#define BF_ISA generic_f64
#include "conv_gemm_impl.h"
#undef UKR
#undef UKRB
#undef AKB
#undef BF_ISA

const bf_conv_isa_impl bf_conv_isa_generic_impl = {
    .name = "generic",
    .workspace_f32 = bf_conv_ws_generic_f32,
    .workspace_f64 = bf_conv_ws_generic_f64,
    .run_f32 = bf_conv_run_generic_f32,
    .run_f64 = bf_conv_run_generic_f64,
};
