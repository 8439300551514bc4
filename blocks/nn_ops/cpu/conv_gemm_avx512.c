/*
 * conv_gemm_avx512.c - AVX-512 instantiation of the convolution kernels (conv_gemm_impl.h).
 *
 * Microkernels: f32 12 x 32 (24 zmm accumulators, 2 zmm of B per k, one broadcast of A per
 * row), f64 12 x 16 (same shape in doubles); each also in a variant that reads A in place
 * (UKRI). Per reduction step: 2 aligned B loads, 12 broadcasts, 24 FMAs, which keeps
 * both Zen 5 FMA pipes busy. Compiled with -mavx512f...
 * (CMake) and only called after bf_conv_cpu_isa_supported(BF_CONV_ISA_AVX512).
 */
#include "conv_cpu_internal.h"

#include <stdint.h>
#include <string.h>

#define BF_VEC_BYTES 64 /* channel vectors of the depthwise loops */

#include <immintrin.h>

/* Store (acc 0) or add (acc 1) an MR x (2 vectors) block to crow[i] + coff, masking the nr
   tail; acc 2 stores like 0, with streaming stores for whole 64-byte-aligned rows (the caller
   fences before anyone reads them). */
#define BF_STORE_ROWS(VT, LOADU, STOREU, MLOAD, MSTORE, MASKT, LANES, STREAM)                   \
    do {                                                                                       \
        MASKT m0 = (MASKT)(nr >= LANES ? (MASKT)~0 : (MASKT)((1u << nr) - 1));                 \
        MASKT m1 = (MASKT)(nr >= 2 * LANES ? (MASKT)~0                                         \
                           : nr > LANES     ? (MASKT)((1u << (nr - LANES)) - 1)                \
                                            : (MASKT)0);                                       \
        for (int i = 0; i < mr; i++) {                                                         \
            T *p = crow[i] + coff;                                                             \
            if (acc == 2 && nr == 2 * LANES && ((uintptr_t)p & 63) == 0) {                     \
                STREAM(p, c[i][0]); /* whole-line, final values: skip the read for ownership */\
                STREAM(p + LANES, c[i][1]);                                                    \
            } else if (nr == 2 * LANES) {                                                      \
                if (acc == 1) {                                                                \
                    c[i][0] = VADD(c[i][0], LOADU(p));                                         \
                    c[i][1] = VADD(c[i][1], LOADU(p + LANES));                                 \
                }                                                                              \
                STOREU(p, c[i][0]);                                                            \
                STOREU(p + LANES, c[i][1]);                                                    \
            } else {                                                                           \
                if (acc == 1) {                                                                \
                    c[i][0] = VADD(c[i][0], MLOAD(m0, p));                                     \
                    c[i][1] = VADD(c[i][1], MLOAD(m1, p + LANES));                             \
                }                                                                              \
                MSTORE(p, m0, c[i][0]);                                                        \
                MSTORE(p + LANES, m1, c[i][1]);                                                \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* Copy n < 16 (f32) / n < 8... values, or zeros when src is NULL, with one masked move. Runs
   longer than one vector are split by the caller. */
static inline void copy_short_f32(float *dst, const float *src, int64_t n) {
    while (n > 0) {
        int64_t k = BF_MIN(n, 16);
        __mmask16 m = (__mmask16)((1u << k) - 1);
        _mm512_mask_storeu_ps(dst, m, src ? _mm512_maskz_loadu_ps(m, src) : _mm512_setzero_ps());
        dst += k, n -= k;
        if (src) src += k;
    }
}
static inline void copy_short_f64(double *dst, const double *src, int64_t n) {
    while (n > 0) {
        int64_t k = BF_MIN(n, 8);
        __mmask8 m = (__mmask8)((1u << k) - 1);
        _mm512_mask_storeu_pd(dst, m, src ? _mm512_maskz_loadu_pd(m, src) : _mm512_setzero_pd());
        dst += k, n -= k;
        if (src) src += k;
    }
}

/* dst[i] += src[i] for n values, a vector at a time with the tail masked (col2im's runs are
   k_w * Cg values, 21 for a 3-channel 7x7 stem: one vector and a masked one, where the
   auto-vectorised loop added the last 5 one by one). */
static inline void add_short_f32(float *dst, const float *src, int64_t n) {
    for (; n > 0; dst += 16, src += 16, n -= 16) {
        __mmask16 m = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1);
        _mm512_mask_storeu_ps(dst, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst),
                                                    _mm512_maskz_loadu_ps(m, src)));
    }
}
static inline void add_short_f64(double *dst, const double *src, int64_t n) {
    for (; n > 0; dst += 8, src += 8, n -= 8) {
        __mmask8 m = (__mmask8)(n >= 8 ? 0xff : (1u << n) - 1);
        _mm512_mask_storeu_pd(dst, m, _mm512_add_pd(_mm512_maskz_loadu_pd(m, dst),
                                                    _mm512_maskz_loadu_pd(m, src)));
    }
}

/* ---- f32 ---- */
#define T float
#define MR 12
#define NR 32
#define VADD _mm512_add_ps

/* A is packed in blocks of KB reduction steps: a[(k / KB) * MR * KB + i * KB + k % KB]. */
static inline __attribute__((always_inline)) void
ukr_avx512_f32(const int KB, int64_t kc, const float *restrict a, const float *restrict b,
               float *const *crow, int64_t coff, int mr, int nr, int acc) {
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < kc; k0 += KB) {
        const float *ab = a + k0 * MR;
        int kn = (int)BF_MIN((int64_t)KB, kc - k0);
        for (int kk = 0; kk < kn; kk++) {
            const float *bk = b + (k0 + kk) * NR;
            __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);
#pragma GCC unroll 12
            for (int i = 0; i < MR; i++) {
                __m512 av = _mm512_set1_ps(ab[i * KB + kk]);
                c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
                c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
            }
        }
    }
    BF_STORE_ROWS(__m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_maskz_loadu_ps,
                  _mm512_mask_storeu_ps, __mmask16, 16, _mm512_stream_ps);
}
static void ukr1_avx512_f32(int64_t kc, const float *a, const float *b, float *const *crow,
                            int64_t coff, int mr, int nr, int acc) {
    ukr_avx512_f32(1, kc, a, b, crow, coff, mr, nr, acc);
}
static void ukrb_avx512_f32(int64_t kc, const float *a, const float *b, float *const *crow,
                            int64_t coff, int mr, int nr, int acc) {
    ukr_avx512_f32(16, kc, a, b, crow, coff, mr, nr, acc);
}
/* A read in place (UKRI): kc / run runs of run values; row i of run t is rows[t * MR + i],
   an input pixel's channels or a row of zeros (rows[t * MR] NULL: the whole run is zeros).
   Its 12 row pointers take most of the general registers, so it is not inlined into the
   task loop, whose own variables would push them out to the stack, and it does 8 steps per
   pass (step by step, it spilled its counter and pointers and tested for a prefetch every
   step): the steps address the rows with constant displacements, and the next block's rows
   are prefetched once per 64-byte line (every 16 steps in floats, every pass in doubles).
   Written once for both element types: the section's T, MR and NR, the intrinsics' suffix
   SFX (ps, pd), its mask type and lanes. */
#define BF_UKRI_AVX512(NAME, VT, SFX, MASKT, LANES)                                             \
    static __attribute__((noinline)) void NAME(                                                \
        int64_t kc, int64_t run, const T *const *rows, const T *const *next, const T *b,       \
        T *const *crow, int64_t coff, int mr, int nr, int acc) {                               \
        const int64_t line = 64 / (int64_t)sizeof(T); /* steps per prefetched line */          \
        VT c[MR][2];                                                                           \
        _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) c[i][0] = c[i][1] =              \
            _mm512_setzero_##SFX();                                                            \
        const T *bt = b;                                                                       \
        for (int64_t t = 0; t < kc / run; t++, bt += run * NR) {                               \
            if (!rows[t * MR]) continue; /* every row of this run is padding */                \
            const T *r[MR];                                                                    \
            _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) r[i] = rows[t * MR + i];     \
            const T *const *nx = next && next[t * MR] ? next + t * MR : NULL;                  \
            int64_t k = 0;                                                                     \
            for (; k + 8 <= run; k += 8) {                                                     \
                if (nx && k % line == 0)                                                       \
                    _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++)                      \
                        _mm_prefetch((const char *)(nx[i] + k), _MM_HINT_T0);                  \
                _Pragma("GCC unroll 8") for (int kk = 0; kk < 8; kk++) {                       \
                    const T *bk = bt + (k + kk) * NR;                                          \
                    VT b0 = _mm512_loadu_##SFX(bk), b1 = _mm512_loadu_##SFX(bk + LANES);       \
                    _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) {                    \
                        VT av = _mm512_set1_##SFX(r[i][k + kk]);                               \
                        c[i][0] = _mm512_fmadd_##SFX(av, b0, c[i][0]);                         \
                        c[i][1] = _mm512_fmadd_##SFX(av, b1, c[i][1]);                         \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            for (; k < run; k++) {                                                             \
                if (nx && k % line == 0)                                                       \
                    _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++)                      \
                        _mm_prefetch((const char *)(nx[i] + k), _MM_HINT_T0);                  \
                VT b0 = _mm512_loadu_##SFX(bt + k * NR);                                       \
                VT b1 = _mm512_loadu_##SFX(bt + k * NR + LANES);                               \
                _Pragma("GCC unroll 12") for (int i = 0; i < MR; i++) {                        \
                    VT av = _mm512_set1_##SFX(r[i][k]);                                        \
                    c[i][0] = _mm512_fmadd_##SFX(av, b0, c[i][0]);                             \
                    c[i][1] = _mm512_fmadd_##SFX(av, b1, c[i][1]);                             \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        BF_STORE_ROWS(VT, _mm512_loadu_##SFX, _mm512_storeu_##SFX, _mm512_maskz_loadu_##SFX,   \
                      _mm512_mask_storeu_##SFX, MASKT, LANES, _mm512_stream_##SFX);            \
    }
BF_UKRI_AVX512(ukri_avx512_f32, __m512, ps, __mmask16, 16)

#define UKR ukr1_avx512_f32
#define UKRI ukri_avx512_f32
#define BF_COPY_SHORT copy_short_f32
#define BF_ADD_SHORT add_short_f32
#define UKRB ukrb_avx512_f32
#define AKB 16
#define BF_ISA avx512_f32
#define BF_VFMA(a, b, c) \
    ((bf_vec)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define BF_VSPLAT _mm512_set1_ps
#define BF_VSTREAM(p, v) _mm512_stream_ps((p), (__m512)(v)) /* p 64-byte aligned */
#define BF_VSTREAM_FENCE _mm_sfence
#include "conv_gemm_impl.h"
#undef BF_VSTREAM
#undef BF_VSTREAM_FENCE
#undef BF_VFMA
#undef BF_VSPLAT
#undef UKR
#undef UKRI
#undef BF_COPY_SHORT
#undef BF_ADD_SHORT
#undef UKRB
#undef AKB
#undef BF_ISA
#undef T
#undef MR
#undef NR
#undef VADD

/* ---- f64 ---- */
#define T double
#define MR 12
#define NR 16
#define VADD _mm512_add_pd

/* A is packed in blocks of KB reduction steps: a[(k / KB) * MR * KB + i * KB + k % KB]. */
static inline __attribute__((always_inline)) void
ukr_avx512_f64(const int KB, int64_t kc, const double *restrict a, const double *restrict b,
               double *const *crow, int64_t coff, int mr, int nr, int acc) {
    __m512d c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm512_setzero_pd();
    for (int64_t k0 = 0; k0 < kc; k0 += KB) {
        const double *ab = a + k0 * MR;
        int kn = (int)BF_MIN((int64_t)KB, kc - k0);
        for (int kk = 0; kk < kn; kk++) {
            const double *bk = b + (k0 + kk) * NR;
            __m512d b0 = _mm512_loadu_pd(bk), b1 = _mm512_loadu_pd(bk + 8);
#pragma GCC unroll 12
            for (int i = 0; i < MR; i++) {
                __m512d av = _mm512_set1_pd(ab[i * KB + kk]);
                c[i][0] = _mm512_fmadd_pd(av, b0, c[i][0]);
                c[i][1] = _mm512_fmadd_pd(av, b1, c[i][1]);
            }
        }
    }
    BF_STORE_ROWS(__m512d, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_maskz_loadu_pd,
                  _mm512_mask_storeu_pd, __mmask8, 8, _mm512_stream_pd);
}
static void ukr1_avx512_f64(int64_t kc, const double *a, const double *b, double *const *crow,
                            int64_t coff, int mr, int nr, int acc) {
    ukr_avx512_f64(1, kc, a, b, crow, coff, mr, nr, acc);
}
static void ukrb_avx512_f64(int64_t kc, const double *a, const double *b, double *const *crow,
                            int64_t coff, int mr, int nr, int acc) {
    ukr_avx512_f64(8, kc, a, b, crow, coff, mr, nr, acc);
}
/* A read in place (UKRI): the f32 kernel's macro above, in doubles (12 x 16). */
BF_UKRI_AVX512(ukri_avx512_f64, __m512d, pd, __mmask8, 8)

#define UKR ukr1_avx512_f64
#define UKRI ukri_avx512_f64
#define BF_COPY_SHORT copy_short_f64
#define BF_ADD_SHORT add_short_f64
#define UKRB ukrb_avx512_f64
#define AKB 8
#define BF_ISA avx512_f64
#define BF_VFMA(a, b, c) \
    ((bf_vec)_mm512_fmadd_pd((__m512d)(a), (__m512d)(b), (__m512d)(c)))
#define BF_VSPLAT _mm512_set1_pd
#define BF_VSTREAM(p, v) _mm512_stream_pd((p), (__m512d)(v)) /* p 64-byte aligned */
#define BF_VSTREAM_FENCE _mm_sfence
#include "conv_gemm_impl.h"
#undef BF_VSTREAM
#undef BF_VSTREAM_FENCE
#undef BF_VFMA
#undef BF_VSPLAT
#undef UKR
#undef UKRI
#undef BF_COPY_SHORT
#undef BF_ADD_SHORT
#undef UKRB
#undef AKB
#undef BF_ISA

const bf_conv_isa_impl bf_conv_isa_avx512_impl = {
    .name = "avx512",
    .workspace_f32 = bf_conv_ws_avx512_f32,
    .workspace_f64 = bf_conv_ws_avx512_f64,
    .run_f32 = bf_conv_run_avx512_f32,
    .run_f64 = bf_conv_run_avx512_f64,
};
