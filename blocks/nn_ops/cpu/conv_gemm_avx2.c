/*
 * conv_gemm_avx2.c - AVX2 + FMA instantiation of the convolution kernels (conv_gemm_impl.h).
 *
 * Microkernels: f32 6 x 16 (12 ymm accumulators, 2 ymm of B, 1 broadcast), f64 6 x 8. The
 * classic Haswell shape: 12 FMAs per 2 B loads and 6 broadcasts. Column tails go through a
 * small stack tile. The f32 one also in a variant that reads A in place (UKRI). Only called
 * after bf_conv_cpu_isa_supported(BF_CONV_ISA_AVX2).
 */
#include "conv_cpu_internal.h"

#include <string.h>

#define BF_VEC_BYTES 32 /* channel vectors of the depthwise loops */
/* BF_VSTREAM (below) is a 32-byte streaming store, half a line: the depthwise row kernel
   uses it only in its two-vector passes, which write whole lines (bf_dw_row_pair), and the
   other families not at all (their `BF_VEC_BYTES >= 64` tests). Half-line streaming stores
   scattered over rows, one vector per pixel per pass, made the AVX2 depthwise FWD and
   BWD_INPUT rows 1.8-1.9x slower (c32@112, c576@14, multiplier 2). */

#include <immintrin.h>

/* Store/add the register tile c[MR][2] to crow[i] + coff for i < mr, j < nr: acc 0 stores,
   acc 1 adds, acc 2 stores final values, with streaming stores where a row of the tile is a
   whole 64-byte-aligned line (its two vectors back to back, so the write-combining buffer
   fills at once; the caller fences before anyone reads them). The row loop runs to the
   constant MR, unrolled, so that c is only ever indexed by constants: indexed by the
   run-time mr, c lived on the stack, and where the microkernel is inlined (the filter GEMM)
   every FMA read and wrote its accumulator there. */
#define BF_STORE_TILE(LOADU, STOREU, VADD, LANES, STREAM)                                      \
    do {                                                                                       \
        if (nr == 2 * LANES) {                                                                 \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                             \
                if (i >= mr) break;                                                            \
                T *p = crow[i] + coff;                                                         \
                if (acc == 2 && ((uintptr_t)p & 63) == 0) {                                    \
                    STREAM(p, c[i][0]);                                                        \
                    STREAM(p + LANES, c[i][1]);                                                \
                    continue;                                                                  \
                }                                                                              \
                if (acc == 1) {                                                                \
                    c[i][0] = VADD(c[i][0], LOADU(p));                                         \
                    c[i][1] = VADD(c[i][1], LOADU(p + LANES));                                 \
                }                                                                              \
                STOREU(p, c[i][0]);                                                            \
                STOREU(p + LANES, c[i][1]);                                                    \
            }                                                                                  \
        } else {                                                                               \
            T tile[MR][2 * LANES];                                                             \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                             \
                STOREU(tile[i], c[i][0]);                                                      \
                STOREU(tile[i] + LANES, c[i][1]);                                              \
            }                                                                                  \
            for (int i = 0; i < mr; i++)                                                       \
                for (int j = 0; j < nr; j++)                                                   \
                    crow[i][coff + j] = acc == 1 ? crow[i][coff + j] + tile[i][j] : tile[i][j]; \
        }                                                                                      \
    } while (0)

/* ---- f32 ---- */
#define T float
#define MR 6
#define NR 16

/* A is packed in blocks of KB reduction steps: a[(k / KB) * MR * KB + i * KB + k % KB]. */
static inline __attribute__((always_inline)) void
ukr_avx2_f32(const int KB, int64_t kc, const float *restrict a, const float *restrict b,
             float *const *crow, int64_t coff, int mr, int nr, int acc) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < kc; k0 += KB) {
        const float *ab = a + k0 * MR;
        int kn = (int)BF_MIN((int64_t)KB, kc - k0);
        for (int kk = 0; kk < kn; kk++) {
            const float *bk = b + (k0 + kk) * NR;
            __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                __m256 av = _mm256_broadcast_ss(ab + i * KB + kk);
                c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
                c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
            }
        }
    }
    BF_STORE_TILE(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, 8, _mm256_stream_ps);
}
static void ukr1_avx2_f32(int64_t kc, const float *a, const float *b, float *const *crow,
                          int64_t coff, int mr, int nr, int acc) {
    ukr_avx2_f32(1, kc, a, b, crow, coff, mr, nr, acc);
}
static void ukrb_avx2_f32(int64_t kc, const float *a, const float *b, float *const *crow,
                          int64_t coff, int mr, int nr, int acc) {
    ukr_avx2_f32(8, kc, a, b, crow, coff, mr, nr, acc);
}

/* A read in place (UKRI, see conv_gemm_impl.h): kc / run runs of run values; row i of run t
   is rows[t * MR + i], rows[t * MR] NULL for a run of padding. The AVX-512 file's kernel in
   this file's 6 x 16 shape: eight steps per pass with constant displacements, the next
   block's rows prefetched every 16 steps. acc 2 (final values, streaming wanted): a row of
   the 6 x 16 tile is one line, streamed whole where aligned (BF_STORE_TILE). */
static __attribute__((noinline)) void
ukri_avx2_f32(int64_t kc, int64_t run, const float *const *rows, const float *const *next,
              const float *b, float *const *crow, int64_t coff, int mr, int nr, int acc) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm256_setzero_ps();
    const float *bt = b;
    for (int64_t t = 0; t < kc / run; t++, bt += run * NR) {
        if (!rows[t * MR]) continue; /* every row of this run is padding */
        const float *r[MR];
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) r[i] = rows[t * MR + i];
        const float *const *nx = next && next[t * MR] ? next + t * MR : NULL;
        int64_t k = 0;
        for (; k + 8 <= run; k += 8) {
            if (nx && k % 16 == 0)
#pragma GCC unroll 6
                for (int i = 0; i < MR; i++) _mm_prefetch((const char *)(nx[i] + k), _MM_HINT_T0);
#pragma GCC unroll 8
            for (int kk = 0; kk < 8; kk++) {
                const float *bk = bt + (k + kk) * NR;
                __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
#pragma GCC unroll 6
                for (int i = 0; i < MR; i++) {
                    __m256 av = _mm256_broadcast_ss(r[i] + k + kk);
                    c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
                    c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
                }
            }
        }
        for (; k < run; k++) {
            if (nx && k % 16 == 0)
#pragma GCC unroll 6
                for (int i = 0; i < MR; i++) _mm_prefetch((const char *)(nx[i] + k), _MM_HINT_T0);
            __m256 b0 = _mm256_loadu_ps(bt + k * NR), b1 = _mm256_loadu_ps(bt + k * NR + 8);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                __m256 av = _mm256_broadcast_ss(r[i] + k);
                c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
                c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
            }
        }
    }
    BF_STORE_TILE(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, 8, _mm256_stream_ps);
}

/* A read in place with a row stride (UKRS, see conv_gemm_impl.h): a[k * lda + i], e.g. the
   channels of consecutive input pixels, lda apart, for the 1x1 filter gradient; and a
   prefetch of the caller's next lines (pf) every 8 steps, spread through the FMAs. */
static __attribute__((noinline)) void
ukrs_avx2_f32(int64_t kc, const float *a, int64_t lda, const float *b, float *const *crow,
              int64_t coff, int mr, int nr, int acc, const char *pf, int64_t npf) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++, a += lda, b += NR) {
        if ((k & 7) == 0 && npf > 0) _mm_prefetch(pf, _MM_HINT_T1), pf += 64, npf--;
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256 av = _mm256_broadcast_ss(a + i);
            c[i][0] = _mm256_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(av, b1, c[i][1]);
        }
    }
    BF_STORE_TILE(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, 8, _mm256_stream_ps);
}

#define UKR ukr1_avx2_f32
#define UKRI ukri_avx2_f32
#define UKRS ukrs_avx2_f32
#define UKRB ukrb_avx2_f32
#define AKB 8
#define BF_ISA avx2_f32
#define BF_VFMA(a, b, c) \
    ((bf_vec)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define BF_VSPLAT _mm256_set1_ps
#define BF_VSTREAM(p, v) _mm256_stream_ps((p), (__m256)(v)) /* p 32-byte aligned */
#define BF_VSTREAM_FENCE _mm_sfence
#include "conv_gemm_impl.h"
#undef BF_VSTREAM
#undef BF_VSTREAM_FENCE
#undef BF_VFMA
#undef BF_VSPLAT
#undef UKR
#undef UKRI
#undef UKRS
#undef UKRB
#undef AKB
#undef BF_ISA
#undef T
#undef MR
#undef NR

/* ---- f64 ---- */
#define T double
#define MR 6
#define NR 8

/* A is packed in blocks of KB reduction steps: a[(k / KB) * MR * KB + i * KB + k % KB]. */
static inline __attribute__((always_inline)) void
ukr_avx2_f64(const int KB, int64_t kc, const double *restrict a, const double *restrict b,
             double *const *crow, int64_t coff, int mr, int nr, int acc) {
    __m256d c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm256_setzero_pd();
    for (int64_t k0 = 0; k0 < kc; k0 += KB) {
        const double *ab = a + k0 * MR;
        int kn = (int)BF_MIN((int64_t)KB, kc - k0);
        for (int kk = 0; kk < kn; kk++) {
            const double *bk = b + (k0 + kk) * NR;
            __m256d b0 = _mm256_loadu_pd(bk), b1 = _mm256_loadu_pd(bk + 4);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                __m256d av = _mm256_broadcast_sd(ab + i * KB + kk);
                c[i][0] = _mm256_fmadd_pd(av, b0, c[i][0]);
                c[i][1] = _mm256_fmadd_pd(av, b1, c[i][1]);
            }
        }
    }
    BF_STORE_TILE(_mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd, 4, _mm256_stream_pd);
}
static void ukr1_avx2_f64(int64_t kc, const double *a, const double *b, double *const *crow,
                          int64_t coff, int mr, int nr, int acc) {
    ukr_avx2_f64(1, kc, a, b, crow, coff, mr, nr, acc);
}
static void ukrb_avx2_f64(int64_t kc, const double *a, const double *b, double *const *crow,
                          int64_t coff, int mr, int nr, int acc) {
    ukr_avx2_f64(4, kc, a, b, crow, coff, mr, nr, acc);
}

/* UKRS (see the f32 one) */
static __attribute__((noinline)) void
ukrs_avx2_f64(int64_t kc, const double *a, int64_t lda, const double *b, double *const *crow,
              int64_t coff, int mr, int nr, int acc, const char *pf, int64_t npf) {
    __m256d c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm256_setzero_pd();
    for (int64_t k = 0; k < kc; k++, a += lda, b += NR) {
        if ((k & 7) == 0 && npf > 0) _mm_prefetch(pf, _MM_HINT_T1), pf += 64, npf--;
        __m256d b0 = _mm256_loadu_pd(b), b1 = _mm256_loadu_pd(b + 4);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            __m256d av = _mm256_broadcast_sd(a + i);
            c[i][0] = _mm256_fmadd_pd(av, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_pd(av, b1, c[i][1]);
        }
    }
    BF_STORE_TILE(_mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd, 4, _mm256_stream_pd);
}

#define UKR ukr1_avx2_f64
#define UKRB ukrb_avx2_f64
#define UKRS ukrs_avx2_f64
#define AKB 4
#define BF_ISA avx2_f64
#define BF_VFMA(a, b, c) \
    ((bf_vec)_mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c)))
#define BF_VSPLAT _mm256_set1_pd
#define BF_VSTREAM(p, v) _mm256_stream_pd((p), (__m256d)(v)) /* p 32-byte aligned */
#define BF_VSTREAM_FENCE _mm_sfence
#include "conv_gemm_impl.h"
#undef BF_VSTREAM
#undef BF_VSTREAM_FENCE
#undef BF_VFMA
#undef BF_VSPLAT
#undef UKR
#undef UKRS
#undef UKRB
#undef AKB
#undef BF_ISA

const bf_conv_isa_impl bf_conv_isa_avx2_impl = {
    .name = "avx2",
    .workspace_f32 = bf_conv_ws_avx2_f32,
    .workspace_f64 = bf_conv_ws_avx2_f64,
    .run_f32 = bf_conv_run_avx2_f32,
    .run_f64 = bf_conv_run_avx2_f64,
};
