/*
 * test_train_ops_cuda_emu.cu - checks, on the CPU, the algorithms of the training ops' CUDA
 * code in every CUDA build, GPU or not (label cpu). It includes pool_cuda.cu and
 * matmul_cuda.cu and runs their host-callable pieces:
 *  - the pooling kernels' per-element functions (max_fwd_at, avg_fwd_at, max_bwd_at,
 *    avg_bwd_at), for every element, float32 and float64, against the CPU kernels
 *    (pool_kernels.c), bit for bit, on 1500 random geometries: NHWC and NCHW, windows 1-4,
 *    strides 1-3, VALID, TF SAME (odd totals give asymmetric pads), random EXPLICIT pads
 *    (max only, as TF), pooling over depth (MaxPool, NHWC), windows larger than the input, and
 *    data drawn from a few values so that windows tie (plus NaN in some max cases): the tie
 *    and NaN rules of MaxPoolGrad and the summation order of the gradients are the CPU's;
 *  - that cuDNN's pooling output size 1 + (H + 2p - k) / s is the geometry's whenever
 *    cudnn_declines lets cuDNN run a case (symmetric pads);
 *  - the cuBLAS arguments of MatMul (row_major_gemm: the row-major product as the column-major
 *    C^T = op(B)^T op(A)^T), through a naive column-major GEMM written here, for every
 *    transpose_a / transpose_b and sizes 1-7, against a row-major float64 reference.
 * What it cannot check: anything that needs a GPU (launches, cuDNN, cuBLAS themselves, the
 * device maths library). tests/blocks/test_train_ops_gpu.c does that where a GPU exists.
 */
#include "array_ops/cuda/matmul_cuda.cu"
#include "nn_ops/cuda/pool_cuda.cu"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

/* The CPU kernels (nn_ops/pool_common.h, which C++ cannot include: it pulls in tensor.h). */
extern "C" {
void bf_pool_max_f32(const bf_pool_geom *g, const float *x, float *y, float lowest,
                     const bf_exec *ex);
void bf_pool_max_f64(const bf_pool_geom *g, const double *x, double *y, double lowest,
                     const bf_exec *ex);
void bf_pool_max_grad_f32(const bf_pool_geom *g, const float *x, const float *dy, float *dx,
                          const bf_exec *ex);
void bf_pool_max_grad_f64(const bf_pool_geom *g, const double *x, const double *dy,
                          double *dx, const bf_exec *ex);
void bf_pool_avg_f32(const bf_pool_geom *g, const float *x, float *y, const bf_exec *ex);
void bf_pool_avg_f64(const bf_pool_geom *g, const double *x, double *y, const bf_exec *ex);
void bf_pool_avg_grad_f32(const bf_pool_geom *g, const float *dy, float *dx,
                          const bf_exec *ex);
void bf_pool_avg_grad_f64(const bf_pool_geom *g, const double *dy, double *dx,
                          const bf_exec *ex);
}

static int64_t rint_(std::mt19937_64 &r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(r() % (uint64_t)(hi - lo + 1));
}

/* One dimension's output size and pads: mode 0 VALID, 1 SAME (TF), 2 EXPLICIT (random pads
 * below the window). -1 when no window fits. */
static int64_t dim_for(int mode, int64_t in, int64_t k, int64_t s, std::mt19937_64 &r,
                       int64_t *before, int64_t *after) {
    *before = *after = 0;
    if (mode == 1) {
        int64_t out = (in + s - 1) / s;
        int64_t need = std::max<int64_t>((out - 1) * s + k - in, 0);
        *before = need / 2, *after = need - *before;
        return out;
    }
    if (mode == 2) *before = rint_(r, 0, k - 1), *after = rint_(r, 0, k - 1);
    int64_t span = in + *before + *after;
    return span < k ? -1 : (span - k) / s + 1;
}

/* A random geometry for op; depth pooling sometimes for MaxPool. */
static bf_pool_geom random_geom(bf_pool_op op, std::mt19937_64 &r) {
    for (;;) {
        bf_pool_geom g;
        memset(&g, 0, sizeof g);
        g.nchw = (int)rint_(r, 0, 1);
        g.n = rint_(r, 1, 3);
        g.h = rint_(r, 1, 9), g.w = rint_(r, 1, 9), g.c = rint_(r, 1, 5);
        g.kd = 1;
        if (op == BF_POOL_MAX && !g.nchw && rint_(r, 0, 7) == 0) { /* over depth */
            g.kd = rint_(r, 2, 3);
            g.c = g.kd * rint_(r, 1, 3);
            g.kh = g.kw = g.sh = g.sw = 1;
            g.oh = g.h, g.ow = g.w, g.oc = g.c / g.kd;
            return g;
        }
        g.kh = rint_(r, 1, 4), g.kw = rint_(r, 1, 4);
        g.sh = rint_(r, 1, 3), g.sw = rint_(r, 1, 3);
        bool max = op == BF_POOL_MAX || op == BF_POOL_MAX_GRAD;
        int mode = (int)rint_(r, 0, max ? 2 : 1);
        g.oh = dim_for(mode, g.h, g.kh, g.sh, r, &g.pt, &g.pb);
        g.ow = dim_for(mode, g.w, g.kw, g.sw, r, &g.pl, &g.pr);
        g.oc = g.c;
        if (g.oh > 0 && g.ow > 0) return g;
    }
}

/* Data from a few values (ties), or uniform; NaN now and then when `nan`. */
template <typename T>
static void fill(std::vector<T> &v, std::mt19937_64 &r, bool ties, bool nan) {
    static const double few[] = {-1.0, -0.5, 0.0, 0.25, 0.5};
    for (auto &e : v) {
        double u = (double)(r() >> 11) * 0x1.0p-53;
        e = (T)(ties ? few[r() % 5] : 2 * u - 1);
        if (nan && r() % 17 == 0) e = (T)NAN;
    }
}

static bool same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

template <typename T> struct cpu;
template <> struct cpu<float> {
    static void max(const bf_pool_geom *g, const float *x, float *y, const bf_exec *ex) {
        bf_pool_max_f32(g, x, y, -FLT_MAX, ex);
    }
    static void max_grad(const bf_pool_geom *g, const float *x, const float *dy, float *dx,
                         const bf_exec *ex) {
        bf_pool_max_grad_f32(g, x, dy, dx, ex);
    }
    static void avg(const bf_pool_geom *g, const float *x, float *y, const bf_exec *ex) {
        bf_pool_avg_f32(g, x, y, ex);
    }
    static void avg_grad(const bf_pool_geom *g, const float *dy, float *dx, const bf_exec *ex) {
        bf_pool_avg_grad_f32(g, dy, dx, ex);
    }
    static constexpr double lowest = -FLT_MAX;
};
template <> struct cpu<double> {
    static void max(const bf_pool_geom *g, const double *x, double *y, const bf_exec *ex) {
        bf_pool_max_f64(g, x, y, -DBL_MAX, ex);
    }
    static void max_grad(const bf_pool_geom *g, const double *x, const double *dy, double *dx,
                         const bf_exec *ex) {
        bf_pool_max_grad_f64(g, x, dy, dx, ex);
    }
    static void avg(const bf_pool_geom *g, const double *x, double *y, const bf_exec *ex) {
        bf_pool_avg_f64(g, x, y, ex);
    }
    static void avg_grad(const bf_pool_geom *g, const double *dy, double *dx,
                         const bf_exec *ex) {
        bf_pool_avg_grad_f64(g, dy, dx, ex);
    }
    static constexpr double lowest = -DBL_MAX;
};

/* One case: the emulated kernel against the CPU kernel, bit for bit. */
template <typename T>
static bool pool_case(bf_pool_op op, const bf_pool_geom &g, std::mt19937_64 &r, char *why,
                      size_t why_size) {
    const pgeo p = pgeo_from(&g);
    const int64_t nx = g.n * g.h * g.w * g.c;
    const int64_t ny = g.kd > 1 ? g.n * g.h * g.w * g.oc : g.n * g.oh * g.ow * g.c;
    const bool max = op == BF_POOL_MAX || op == BF_POOL_MAX_GRAD;
    std::vector<T> x((size_t)nx), dy((size_t)ny);
    fill(x, r, r() % 3 != 0, max && r() % 5 == 0);
    fill(dy, r, false, false);
    bf_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.n_threads = 1;
    const int64_t total = pool_total(op, p);
    const int64_t n_out = op == BF_POOL_MAX || op == BF_POOL_AVG ? ny : nx;
    if (total != n_out) {
        snprintf(why, why_size, "pool_total %lld, want %lld", (long long)total, (long long)n_out);
        return false;
    }
    std::vector<T> want((size_t)n_out), got((size_t)n_out, (T)12345);
    typedef typename bf_acc<T>::type A;
    switch (op) {
    case BF_POOL_MAX:
        cpu<T>::max(&g, x.data(), want.data(), &ex);
        for (int64_t i = 0; i < total; i++) max_fwd_at<T>(p, x.data(), got.data(), (A)cpu<T>::lowest, i);
        break;
    case BF_POOL_AVG:
        cpu<T>::avg(&g, x.data(), want.data(), &ex);
        for (int64_t i = 0; i < total; i++) avg_fwd_at<T>(p, x.data(), got.data(), i);
        break;
    case BF_POOL_MAX_GRAD:
        cpu<T>::max_grad(&g, x.data(), dy.data(), want.data(), &ex);
        for (int64_t i = 0; i < total; i++) max_bwd_at<T>(p, x.data(), dy.data(), got.data(), i);
        break;
    case BF_POOL_AVG_GRAD:
        cpu<T>::avg_grad(&g, dy.data(), want.data(), &ex);
        for (int64_t i = 0; i < total; i++) avg_bwd_at<T>(p, dy.data(), got.data(), i);
        break;
    }
    if (same_bits(want.data(), got.data(), want.size() * sizeof(T))) return true;
    for (size_t i = 0; i < want.size(); i++)
        if (!same_bits(&want[i], &got[i], sizeof(T))) {
            snprintf(why, why_size, "element %zu: cpu %.17g, emulated %.17g", i, (double)want[i],
                     (double)got[i]);
            break;
        }
    return false;
}

static const char *op_str(bf_pool_op op) {
    static const char *const s[] = {"MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad"};
    return s[op];
}

static void geom_str(const bf_pool_geom &g, char *buf, size_t size) {
    snprintf(buf, size,
             "%s n%lld h%lld w%lld c%lld k%lldx%lld(d%lld) s%lldx%lld pads t%lld b%lld l%lld "
             "r%lld -> %lldx%lld",
             g.nchw ? "NCHW" : "NHWC", (long long)g.n, (long long)g.h, (long long)g.w,
             (long long)g.c, (long long)g.kh, (long long)g.kw, (long long)g.kd, (long long)g.sh,
             (long long)g.sw, (long long)g.pt, (long long)g.pb, (long long)g.pl, (long long)g.pr,
             (long long)g.oh, (long long)g.ow);
}

/* A naive column-major GEMM with cuBLAS's argument conventions (alpha 1, beta 0). */
static void colmajor_gemm(cublasOperation_t op1, cublasOperation_t op2, int m, int n, int k,
                          const double *a1, int ld1, const double *a2, int ld2, double *c,
                          int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++) {
                double x = op1 == CUBLAS_OP_N ? a1[i + l * ld1] : a1[l + i * ld1];
                double y = op2 == CUBLAS_OP_N ? a2[l + j * ld2] : a2[j + l * ld2];
                s += x * y;
            }
            c[i + j * ldc] = s;
        }
}

static int matmul_cases(std::mt19937_64 &r) {
    int fails = 0;
    for (int cs = 0; cs < 400; cs++) {
        const int M = (int)rint_(r, 1, 7), N = (int)rint_(r, 1, 7), K = (int)rint_(r, 1, 7);
        const bool ta = cs & 1, tb = (cs >> 1) & 1;
        std::vector<double> a((size_t)(M * K)), b((size_t)(K * N)), c((size_t)(M * N), NAN);
        for (auto &e : a) e = (double)rint_(r, -9, 9);
        for (auto &e : b) e = (double)rint_(r, -9, 9);
        const gemm_args g = row_major_gemm(M, N, K, ta, tb);
        colmajor_gemm(g.op1, g.op2, g.m, g.n, g.k, b.data(), g.ld1, a.data(), g.ld2, c.data(),
                      g.ldc);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double want = 0; /* op(a) is [M,K]: a[i][l] or, with ta, a stored [K,M] */
                for (int l = 0; l < K; l++)
                    want += (ta ? a[(size_t)(l * M + i)] : a[(size_t)(i * K + l)]) *
                            (tb ? b[(size_t)(j * K + l)] : b[(size_t)(l * N + j)]);
                if (c[(size_t)(i * N + j)] != want) {
                    if (fails++ < 10)
                        printf("FAIL MatMul M%d N%d K%d ta%d tb%d: c[%d][%d] = %g, want %g\n", M,
                               N, K, ta, tb, i, j, c[(size_t)(i * N + j)], want);
                    i = M; /* one report per case */
                    break;
                }
            }
    }
    return fails;
}

int main() {
    std::mt19937_64 r(20240607);
    int fails = 0, runs = 0, cudnn_cases = 0;
    for (int cs = 0; cs < 1500; cs++) {
        const bf_pool_op op = (bf_pool_op)(cs % 4);
        const bf_pool_geom g = random_geom(op, r);
        char why[256] = "", where[256];
        for (int dt = 0; dt < 2; dt++) {
            bool ok = dt ? pool_case<double>(op, g, r, why, sizeof why)
                         : pool_case<float>(op, g, r, why, sizeof why);
            runs++;
            if (!ok && fails++ < 20) {
                geom_str(g, where, sizeof where);
                printf("FAIL %s %s %s: %s\n", op_str(op), dt ? "float64" : "float32", where, why);
            }
        }
        /* where cuDNN would run the case, its output size is the geometry's */
        if (!cudnn_declines(op, &g, BF_DTYPE_F32)) {
            cudnn_cases++;
            int64_t oh = 1 + (g.h + 2 * g.pt - g.kh) / g.sh, ow = 1 + (g.w + 2 * g.pl - g.kw) / g.sw;
            if (oh != g.oh || ow != g.ow) {
                geom_str(g, where, sizeof where);
                if (fails++ < 20)
                    printf("FAIL cuDNN output size %lldx%lld for %s\n", (long long)oh,
                           (long long)ow, where);
            }
        }
    }
    int mm_fails = matmul_cases(r);
    fails += mm_fails;
    printf("test_train_ops_cuda_emu: %d pooling runs (%d geometries cuDNN would take), 400 MatMul "
           "argument cases, %d failures\n",
           runs, cudnn_cases, fails);
    return fails ? 1 : 0;
}
