/*
 * matmul_cuda.cu - MatMul on the GPU through cuBLAS (matmul_cuda.h).
 *
 * cuBLAS is column-major and our tensors are row-major. A row-major [r, c] matrix is, byte for
 * byte, the column-major [c, r] matrix that is its transpose, so the row-major product
 * C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, with no copy:
 *   first operand  b: [k, n] row-major is op(B)^T as stored (CUBLAS_OP_N, ld n);
 *                     with tb, [n, k] row-major is op(B), so CUBLAS_OP_T, ld k;
 *   second operand a: [m, k] row-major is op(A)^T as stored (CUBLAS_OP_N, ld k);
 *                     with ta, [k, m] row-major is op(A), so CUBLAS_OP_T, ld m;
 *   result c: column-major [n, m] with ld n, which is row-major [m, n].
 *
 * cuBLAS is loaded when a session first runs a MatMul on the GPU (bf_cuda_ctx_cublas: dlopen,
 * not linked, see cuda_ctx.h). Numbers: float32 runs cublasSgemm and float64 cublasDgemm with
 * the handle in CUBLAS_PEDANTIC_MATH: plain FMA arithmetic, no TF32, no emulation, so
 * the result differs from the CPU's GEMM only by the order of the k additions (about
 * k * 2^-24 relative at worst). float16 and bfloat16 run cublasGemmEx with float computation:
 * the operands are exact in float, products are summed in float and the result is rounded
 * once, as the CPU kernel does. cuBLAS routines are bitwise reproducible from run to run on
 * one GPU with one stream and no atomics (CUBLAS_ATOMICS_NOT_ALLOWED, its default).
 */
#include "array_ops/matmul_cuda.h"

#include "devices/cuda_ctx.h"

#include <limits.h>
#include <stdio.h>

/* The arguments of the column-major cuBLAS call that computes the row-major product: first
 * operand b, second operand a (tests/cuda/test_pool_cuda_emu.cu checks them on the host). */
struct gemm_args {
    cublasOperation_t op1, op2; /* of the first (b) and the second (a) operand */
    int m, n, k;                /* of the column-major product C^T [N, M] */
    int ld1, ld2, ldc;
};

static gemm_args row_major_gemm(int M, int N, int K, bool ta, bool tb) {
    gemm_args g;
    g.op1 = tb ? CUBLAS_OP_T : CUBLAS_OP_N, g.ld1 = tb ? K : N;
    g.op2 = ta ? CUBLAS_OP_T : CUBLAS_OP_N, g.ld2 = ta ? M : K;
    g.m = N, g.n = M, g.k = K, g.ldc = N;
    return g;
}

extern "C" bf_status bf_matmul_cuda(int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                                    bf_dtype dt, const void *a, const void *b, void *c,
                                    const bf_exec *ex, bf_error *err) {
    if (m < 1 || n < 1 || k < 1 || m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported",
                      "MatMul on the GPU takes dimensions from 1 to 2^31-1, got m=%lld n=%lld "
                      "k=%lld", (long long)m, (long long)n, (long long)k);
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "no GPU MatMul for dtype %s",
                      bf_dtype_name(dt));
    bf_cuda_ctx *ctx = ex ? (bf_cuda_ctx *)ex->device_ctx : NULL;
    if (!ctx)
        return bf_err(err, BF_EINTERNAL, "no_device_ctx",
                      "MatMul on the GPU needs the session's CUDA state (ex->device_ctx)");
    cudaError_t ce = cudaSetDevice(ctx->ordinal);
    if (ce != cudaSuccess)
        return bf_err(err, BF_EDEVICE, "cuda", "cudaSetDevice: %s", cudaGetErrorString(ce));
    cudaStream_t stream = ex->stream ? (cudaStream_t)ex->stream : ctx->stream;

    const gemm_args g = row_major_gemm((int)m, (int)n, (int)k, ta, tb);

    const char *what = "cublasSetStream", *name = "?";
    pthread_mutex_lock(&ctx->lock);
    bf_status rc = bf_cuda_ctx_cublas(ctx, err);
    if (rc != BF_OK) {
        pthread_mutex_unlock(&ctx->lock);
        return rc;
    }
    const bf_cublas_api *api = &ctx->blas;
    cublasHandle_t h = ctx->cublas;
    cublasStatus_t s = api->set_stream(h, stream);
    if (s == CUBLAS_STATUS_SUCCESS) {
        if (dt == BF_DTYPE_F32) {
            const float one = 1.0f, zero = 0.0f;
            what = name = "cublasSgemm";
            s = api->sgemm(h, g.op1, g.op2, g.m, g.n, g.k, &one, (const float *)b, g.ld1,
                           (const float *)a, g.ld2, &zero, (float *)c, g.ldc);
        } else if (dt == BF_DTYPE_F64) {
            const double one = 1.0, zero = 0.0;
            what = name = "cublasDgemm";
            s = api->dgemm(h, g.op1, g.op2, g.m, g.n, g.k, &one, (const double *)b, g.ld1,
                           (const double *)a, g.ld2, &zero, (double *)c, g.ldc);
        } else {
            const float one = 1.0f, zero = 0.0f;
            const cudaDataType_t t = dt == BF_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
            what = name = "cublasGemmEx";
            s = api->gemm_ex(h, g.op1, g.op2, g.m, g.n, g.k, &one, b, t, g.ld1, a, t, g.ld2,
                             &zero, c, t, g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    if (s != CUBLAS_STATUS_SUCCESS) {
        rc = bf_err(err, BF_EDEVICE, "cublas", "%s: %s", what, api->status_string(s));
    } else if (ex->note && ex->note_size) {
        snprintf(ex->note, ex->note_size, "%s%s%s (%s)", name,
                 dt == BF_DTYPE_F16 ? " float16" : dt == BF_DTYPE_BF16 ? " bfloat16" : "",
                 ta || tb ? (ta && tb ? " a^T b^T" : ta ? " a^T b" : " a b^T") : "",
                 dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16 ? "float accumulation"
                                                           : "pedantic math, no TF32");
    }
    return rc;
}
