/*
 * loss_kernels.c - the CPU row kernels of the softmax and cross-entropy blocks (loss_common.h),
 * instantiated from loss_kernels_impl.h for float32 and float64, and the helpers the loss
 * blocks share: the float16/bfloat16 conversions and workspace, TF-style shape strings, and
 * the gradient compositions of nn_grad.py.
 *
 * Rows are independent: a problem is split into contiguous ranges of rows, enough tasks for
 * the pool's threads, each worth at least ~32k element operations (a [128, 10] cross entropy
 * runs on the calling thread).
 */
#include "loss_common.h"

#include "half.h"

#include <math.h>
#include <stdio.h>
#include <inttypes.h>

static inline void lk_range(int64_t units, int64_t tasks, int64_t t, int64_t *u0, int64_t *u1) {
    *u0 = units * t / tasks;
    *u1 = units * (t + 1) / tasks;
}

static int64_t lk_tasks(const bf_exec *ex, int64_t rows, int64_t cost) {
    int threads = ex && ex->pool && ex->n_threads > 1 ? ex->n_threads : 1;
    if (threads <= 1 || rows <= 1) return 1;
    double t = (double)rows * (double)(cost > 0 ? cost : 1) / 32768.0;
    if (t > (double)rows) t = (double)rows;
    if (t > 4.0 * threads) t = 4.0 * threads;
    return t < 1 ? 1 : (int64_t)t;
}

static void lk_run(const bf_exec *ex, int64_t tasks, bf_task_fn fn, void *arg) {
    if (tasks <= 1) fn(arg, 0, 0);
    else bf_parallel_for(ex, tasks, fn, arg);
}

#define LK_T   float
#define LK_S   f32
#define LK_EXP expf
#define LK_LOG logf
#include "loss_kernels_impl.h"
#undef LK_T
#undef LK_S
#undef LK_EXP
#undef LK_LOG

#define LK_T   double
#define LK_S   f64
#define LK_EXP exp
#define LK_LOG log
#include "loss_kernels_impl.h"
#undef LK_T
#undef LK_S
#undef LK_EXP
#undef LK_LOG

/* ---- float16 / bfloat16 ------------------------------------------------------------------ */

bool bf_loss_is_half(bf_dtype dt) { return dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16; }

void bf_loss_widen(bf_dtype dt, const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    if (dt == BF_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f16_to_f32(s[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_bf16_to_f32(s[i]);
    }
}

void bf_loss_narrow(bf_dtype dt, const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    if (dt == BF_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_bf16(src[i]);
    }
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t bf_loss_half_workspace(int count, const int64_t *n) {
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        size_t b;
        if (n[i] < 0 || !bf_size_mul((size_t)n[i], 4, &b) || b > SIZE_MAX / 2 ||
            !bf_size_add(total, align64(b), &total))
            return SIZE_MAX;
    }
    return total;
}

bf_status bf_loss_half_arrays(const bf_exec *ex, int count, const int64_t *n, float **arrays,
                              void **own, bf_error *err) {
    *own = NULL;
    size_t total = bf_loss_half_workspace(count, n);
    if (total == SIZE_MAX)
        return bf_err(err, BF_ELIMIT, "too_large", "workspace size overflows");
    char *ws = ex ? ex->workspace : NULL;
    if (ws && ex->workspace_size < total)
        return bf_err(err, BF_EINTERNAL, "workspace", "planned workspace of %zu bytes is "
                      "smaller than the %zu this call needs", ex->workspace_size, total);
    if (!ws) {
        if (!(*own = bf_aligned_alloc(total ? total : 64, false)))
            return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory for %zu bytes of workspace",
                          total);
        ws = *own;
    }
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        arrays[i] = (float *)(ws + off);
        off += align64((size_t)n[i] * 4);
    }
    return BF_OK;
}

/* ---- messages ------------------------------------------------------------------------------ */

const char *bf_loss_shape_str(int rank, const int64_t *dims, char *buf, size_t size) {
    size_t k = 0;
    buf[k++] = '[';
    for (int i = 0; i < rank && k + 24 < size; i++) {
        if (dims[i] < 0) k += (size_t)snprintf(buf + k, size - k, "%s?", i ? "," : "");
        else k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, i ? "," : "", dims[i]);
    }
    snprintf(buf + k, size - k, "]");
    return buf;
}

/* ---- gradients ------------------------------------------------------------------------------ */

static const char *named(char *buf, size_t size, const char *name, const char *what) {
    snprintf(buf, size, "%s_%s", name, what);
    return buf;
}

const char *bf_loss_grad_softmax(bf_grad_ctx *g, const char *name, const char *dy,
                                 const char *y) {
    char b[96];
    const int64_t last = -1;
    const char *prod = bf_grad_add(g, named(b, sizeof(b), name, "prod"), "Mul", NULL, "x", dy,
                                   "y", y, (const char *)NULL);
    const char *axis = prod ? bf_grad_const_i32(g, named(b, sizeof(b), name, "axis"), 1, &last)
                            : NULL;
    const char *sum = axis ? bf_grad_add(g, named(b, sizeof(b), name, "sum"), "Sum",
                                         "{\"keep_dims\":true}", "input", prod,
                                         "reduction_indices", axis, (const char *)NULL)
                           : NULL;
    const char *diff = sum ? bf_grad_add(g, named(b, sizeof(b), name, "sub"), "Sub", NULL, "x",
                                         dy, "y", sum, (const char *)NULL)
                           : NULL;
    return diff ? bf_grad_add(g, named(b, sizeof(b), name, "mul"), "Mul", NULL, "x", diff, "y",
                              y, (const char *)NULL)
                : NULL;
}

const char *bf_loss_grad_xent_features(bf_grad_ctx *g) {
    const char *dloss = bf_grad_dy(g, 0), *dbp = bf_grad_dy(g, 1);
    const bf_port_info *bp = bf_grad_output_info(g, 1);
    const char *col = NULL, *grad = NULL;
    if (dloss) {
        /* ExpandDims(dy_loss, -1): a Reshape to [batch, 1] (batch -1 when not known). */
        const int64_t shape[2] = {bp && bp->rank == 2 ? bp->dims[0] : -1, 1};
        const char *sh = bf_grad_const_i32(g, "expand_shape", 2, shape);
        col = sh ? bf_grad_add(g, "expand", "Reshape", NULL, "tensor", dloss, "shape", sh,
                               (const char *)NULL)
                 : NULL;
        grad = col ? bf_grad_add(g, "grad_mul", "Mul", NULL, "x", col, "y",
                                 bf_grad_output(g, 1), (const char *)NULL)
                   : NULL;
        if (!grad) return NULL;
    }
    if (dbp && bf_grad_wants(g, 0)) {
        /* The softmax's own gradient of what arrives at backprop (TF: grad_grad). */
        const char *sm = bf_grad_add(g, "softmax", "Softmax", NULL, "logits",
                                     bf_grad_input(g, 0), (const char *)NULL);
        const char *t = sm ? bf_loss_grad_softmax(g, "grad_grad", dbp, sm) : NULL;
        if (!t) return NULL;
        grad = grad ? bf_grad_add(g, "grad_add", "Add", NULL, "x", grad, "y", t,
                                  (const char *)NULL)
                    : t;
        if (!grad) return NULL;
    }
    if (grad && bf_grad_wants(g, 0)) {
        /* features broadcast against labels ([1, C] against [B, C]): sum back to its shape */
        const char *r = bf_grad_unbroadcast(g, "grad_features", grad, bp, 0);
        if (r) bf_grad_set(g, 0, r);
    }
    return col;
}
