/*
 * fma_ceiling.c - what one core of this machine does with AVX-512 (and AVX2) FMAs fed from L1
 * (benchmark only; never linked into the library). Built as blockflow-fma-ceiling by
 * bench/CMakeLists.txt.
 *
 *     build/blockflow-fma-ceiling
 *
 * Times, on one thread, GEMM microkernels of several register shapes (M rows x NV vectors of
 * 16 floats: per reduction step NV vector loads of B, M broadcasts of A, M*NV FMAs into M*NV
 * accumulators), and the AVX2 file's 6 x 16 shape in 256-bit vectors, on operands that stay
 * in L1. Their GFLOP/s is the most a convolution kernel
 * built on broadcast-and-FMA can reach here, so `blockflow bench` rows are judged against it
 * (bench/RESULTS.md, "Issue 16, first round", "The ceiling"). Every shape reaching the same
 * figure says the limit is the core's FMA throughput, not the kernel's shape.
 */
#include <immintrin.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KC 192   /* reduction steps per call: B is KC x NV*16 floats (at most 72 KiB) */
#define REPS 200000

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* c[M][NV] = sum_k a[k][M] * b[k][NV*16], every loop unrolled so acc stays in registers */
#define KERNEL(NAME, M, NV)                                                                   \
    __attribute__((noinline, target("avx512f,fma"))) static void NAME(const float *a, const float *b, float *c) {    \
        __m512 acc[M][NV];                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < M; i++)                                  \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) acc[i][j] =                  \
                _mm512_setzero_ps();                                                          \
        for (int k = 0; k < KC; k++) {                                                        \
            __m512 bv[NV];                                                                    \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) bv[j] =                      \
                _mm512_load_ps(b + (k * NV + j) * 16);                                        \
            _Pragma("GCC unroll 16") for (int i = 0; i < M; i++) {                            \
                __m512 av = _mm512_set1_ps(a[k * M + i]);                                     \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) acc[i][j] =              \
                    _mm512_fmadd_ps(av, bv[j], acc[i][j]);                                    \
            }                                                                                 \
        }                                                                                     \
        _Pragma("GCC unroll 16") for (int i = 0; i < M; i++)                                  \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)                              \
                _mm512_storeu_ps(c + (i * NV + j) * 16, acc[i][j]);                           \
    }

KERNEL(k12x2, 12, 2) /* our f32 microkernel's shape (12 x 32) */
KERNEL(k6x4, 6, 4)
KERNEL(k4x6, 4, 6)
KERNEL(k9x3, 9, 3)

/* The AVX2 file's shape, 6 rows x 2 vectors of 8 floats (12 ymm accumulators): whether this
   core's 256-bit FMAs reach the same FLOP rate as its 512-bit ones, i.e. whether
   `blockflow bench --isa avx2` is at a width disadvantage here. Same data layout as KERNEL,
   NV counted in 16-float units (b rows of 16 floats, read as two ymm). Unrolled by 8 as the
   AVX2 in-place microkernel is: step by step, its 12 FMAs per iteration left the loop at half
   the rate (59 against 111 GFLOP/s on this machine). */
__attribute__((noinline, target("avx2,fma"))) static void k6x16_avx2(const float *a,
                                                                       const float *b, float *c) {
    __m256 acc[6][2];
    _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] =
        _mm256_setzero_ps();
    _Pragma("GCC unroll 8") for (int k = 0; k < KC; k++) {
        __m256 b0 = _mm256_load_ps(b + k * 16), b1 = _mm256_load_ps(b + k * 16 + 8);
        _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) {
            __m256 av = _mm256_set1_ps(a[k * 6 + i]);
            acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
        }
    }
    _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) {
        _mm256_storeu_ps(c + i * 16, acc[i][0]);
        _mm256_storeu_ps(c + i * 16 + 8, acc[i][1]);
    }
}

/* The AVX2 direct kernels' shape: R rows x NV ymm vectors (NV * 8 floats; b rows of NV * 8
   floats), e.g. 6 x 4 (the direct forward's 6 pixels x 32 channels when its vectors are
   256-bit: 24 accumulators). */
#define KERNEL2(NAME, M, NV)                                                                  \
    __attribute__((noinline, target("avx2,fma"))) static void NAME(const float *a,            \
                                                                   const float *b, float *c) { \
        __m256 acc[M][NV];                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < M; i++)                                  \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) acc[i][j] =                  \
                _mm256_setzero_ps();                                                          \
        _Pragma("GCC unroll 4") for (int k = 0; k < KC; k++) {                                \
            __m256 bv[NV];                                                                    \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) bv[j] =                      \
                _mm256_load_ps(b + (k * NV + j) * 8);                                         \
            _Pragma("GCC unroll 16") for (int i = 0; i < M; i++) {                            \
                __m256 av = _mm256_set1_ps(a[k * M + i]);                                     \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++) acc[i][j] =              \
                    _mm256_fmadd_ps(av, bv[j], acc[i][j]);                                    \
            }                                                                                 \
        }                                                                                     \
        _Pragma("GCC unroll 16") for (int i = 0; i < M; i++)                                  \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)                              \
                _mm256_storeu_ps(c + (i * NV + j) * 8, acc[i][j]);                            \
    }

KERNEL2(k4x24_avx2, 4, 3)
KERNEL2(k3x32_avx2, 3, 4)

typedef void (*kernel_fn)(const float *, const float *, float *);

int main(void) {
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!avx2 && !avx512) {
        printf("fma_ceiling: this CPU has neither AVX-512 nor AVX2 with FMA\n");
        return 0;
    }
    float *a = aligned_alloc(64, KC * 16 * sizeof(float));
    float *b = aligned_alloc(64, KC * 96 * sizeof(float));
    float *c = aligned_alloc(64, 16 * 96 * sizeof(float));
    if (!a || !b || !c) return 1;
    for (int i = 0; i < KC * 16; i++) a[i] = 1e-3f * (float)(i % 97);
    for (int i = 0; i < KC * 96; i++) b[i] = 1e-3f * (float)(i % 89);
    static const struct {
        const char *name;
        kernel_fn fn;
        int m, lanes, is512; /* FLOPs per reduction step: 2 * m * lanes */
    } shapes[] = {{"12x32", k12x2, 12, 32, 1}, {"6x64", k6x4, 6, 64, 1},
                  {"4x96", k4x6, 4, 96, 1}, {"9x48", k9x3, 9, 48, 1},
                  {"6x16 (AVX2, 256-bit)", k6x16_avx2, 6, 16, 0},
                  {"4x24 (AVX2, 256-bit)", k4x24_avx2, 4, 24, 0},
                  {"3x32 (AVX2, 256-bit)", k3x32_avx2, 3, 32, 0}};
    printf("one core, operands in L1, %d reduction steps per call%s:\n", KC,
           avx512 ? "" : " (no AVX-512 on this CPU: AVX2 shapes only)");
    double sink = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (shapes[s].is512 ? !avx512 : !avx2) continue;
        double best = 1e30;
        for (int trial = 0; trial < 5; trial++) {
            double t = now_s();
            for (int r = 0; r < REPS / 5; r++) shapes[s].fn(a, b, c);
            t = now_s() - t;
            if (t < best) best = t;
            sink += c[3];
        }
        double flop = 2.0 * KC * shapes[s].m * shapes[s].lanes * (REPS / 5);
        printf("  microkernel %-21s %7.1f GFLOP/s\n", shapes[s].name, flop / best / 1e9);
    }
    printf("(checksum %g)\n", sink);
    free(a), free(b), free(c);
    return 0;
}
