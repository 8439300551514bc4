/*
 * Block:    MatMul
 * Synopsis: product = op(a) x op(b), op(m) = m^T when transpose_* is set
 * Padding:  none.
 * Example:  a = [[1,2,3],[4,5,6]] (2x3), b = [[1,0],[0,1],[1,1]] (3x2)
 *           ->  product = [[4,5],[10,11]].
 *
 * matmul.c - TensorFlow's MatMul (core/ops/math_ops.cc, kernels/matmul_op_impl.h with
 * is_legacy_matmul): two rank-2 operands of one dtype, transpose_a / transpose_b, the
 * checks and messages of the CPU kernel ("In[0] and In[1] has different ndims", "In[0] and
 * In[1] ndims must be == 2", "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]"). grad_a
 * and grad_b are TF's hints for picking a kernel: accepted, and they change nothing.
 *
 * float32 and float64 run on the packed GEMM of the convolutions (nn_ops/cpu, through the
 * public conv_kernels.h), which is a plain GEMM when the convolution is 1x1 on a 1x1 image:
 *   a x b       = Conv2D                x = a [M,1,1,K],  w = b [1,1,K,N]   -> y  [M,1,1,N]
 *   op(a) x b^T = Conv2DBackpropInput   dy = a [M,1,1,K], w = b [1,1,N,K]   -> dx [M,1,1,N]
 *   a^T x b     = Conv2DBackpropFilter  x = a [K,1,1,M],  dy = b [K,1,1,N]  -> dw [1,1,M,N]
 * and a^T x b^T copies a^T into the workspace first (a cache-tiled transpose), then takes the
 * second form. That GEMM picks AVX-512, AVX2+FMA or portable code at run time and splits its
 * row blocks over the kernel pool. float16 and bfloat16 are
 * widened to float32 in the workspace, multiplied there and rounded once, as TF's CPU kernel
 * does. int32 and int64 are exact: accumulated in int64, and a product or sum that overflows
 * the dtype is an error (TF wraps around silently).
 *
 * On the GPU (cuda/matmul_cuda.cu): cuBLAS, float32 (Sgemm) and float64 (Dgemm) in pedantic
 * math (no TF32), float16 and bfloat16 (GemmEx) with float accumulation and one rounding, the
 * transposes folded into the call. int32 and int64 stay on the CPU (exact, overflow-checked),
 * and so do dimensions of 2^31 or more (cuBLAS's int sizes); the run report says why.
 */
#include "array_util.h"
#include "device.h"
#include "matmul_cuda.h"
#include "half.h"
#include "nn_ops/conv_kernels.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

enum { A_TA, A_TB, A_GA, A_GB };
static const bf_attr_desc attrs[] = {
    [A_TA] = {"transpose_a", BF_ATTR_BOOL, "false", NULL, 0, "If true, a is transposed first."},
    [A_TB] = {"transpose_b", BF_ATTR_BOOL, "false", NULL, 0, "If true, b is transposed first."},
    [A_GA] = {"grad_a", BF_ATTR_BOOL, "false", NULL, 0,
              "TF's hint that this MatMul computes a gradient of a (changes nothing here)."},
    [A_GB] = {"grad_b", BF_ATTR_BOOL, "false", NULL, 0,
              "TF's hint that this MatMul computes a gradient of b (changes nothing here)."},
};
static const bf_port_desc inputs[] = {
    {"a", BF_DT_ALL, 0, "matrix [M,K] ([K,M] with transpose_a)"},
    {"b", BF_DT_ALL, 0, "matrix [K,N] ([N,K] with transpose_b)"},
};
static const bf_port_desc outputs[] = {{"product", BF_DT_ALL, 0, "matrix [M,N]"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    const bf_port_info *a = &in[0], *b = &in[1];
    bool ta = node->attrs[A_TA].b, tb = node->attrs[A_TB].b;
    char s0[96], s1[96];
    if (a->dtype && b->dtype && a->dtype != b->dtype)
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "b", NULL,
                          "Input 'b' of 'MatMul' Op has type %s that does not match type %s of "
                          "argument 'a'.",
                          bf_dtype_name(b->dtype), bf_dtype_name(a->dtype));
    if (a->rank >= 0 && b->rank >= 0 && a->rank != b->rank)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", a->rank != 2 ? "a" : "b", NULL,
                          "In[0] and In[1] has different ndims: %s vs. %s",
                          bf_tf_shape_of(a, s0, sizeof(s0)), bf_tf_shape_of(b, s1, sizeof(s1)));
    for (int k = 0; k < 2; k++)
        if (in[k].rank >= 0 && in[k].rank != 2)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", k ? "b" : "a", NULL,
                              "In[0] and In[1] ndims must be == 2: %d", in[k].rank);
    int64_t m = -1, ka = -1, kb = -1, n = -1;
    if (a->rank == 2) m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
    if (b->rank == 2) kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (!bf_dims_compatible(ka, kb))
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "b", NULL,
                          "Matrix size-incompatible: In[0]: %s, In[1]: %s",
                          bf_tf_shape_of(a, s0, sizeof(s0)), bf_tf_shape_of(b, s1, sizeof(s1)));
    int64_t dims[2] = {m, n};
    bf_port_set(&out[0], a->dtype ? a->dtype : b->dtype, 2, dims);
    return BF_OK;
}

/* ---- the float GEMM: plan and run ------------------------------------------------------- */

/* What one run does, derived from the (known) shapes; the workspace and the kernel both use
 * it, so the run gets the workspace that was planned for it. */
typedef struct mm_plan {
    int64_t m, k, n;
    bool ta, tb;
    bf_dtype dt;  /* of the tensors */
    bf_dtype cdt; /* computed in: F32 or F64 (ints: INVALID) */
    bf_conv_geom g;
    bf_conv_op op;
    size_t conv_ws;                                  /* the GEMM's own scratch */
    size_t off_a, off_b, off_c, off_t, off_g, total; /* workspace pieces (bytes) */
} mm_plan;

static size_t align64(size_t b) { return b > SIZE_MAX - 64 ? SIZE_MAX : (b + 63) & ~(size_t)63; }

static size_t add_piece(size_t *total, size_t bytes) {
    size_t at = *total;
    bytes = align64(bytes);
    *total = (at > SIZE_MAX - bytes) ? SIZE_MAX : at + bytes;
    return at;
}

static void make_plan(const bf_node *node, const int64_t *ad, const int64_t *bd, bf_dtype dt,
                      int n_threads, mm_plan *p) {
    memset(p, 0, sizeof(*p));
    p->ta = node->attrs[A_TA].b, p->tb = node->attrs[A_TB].b, p->dt = dt;
    p->m = ad[p->ta ? 1 : 0], p->k = ad[p->ta ? 0 : 1], p->n = bd[p->tb ? 0 : 1];
    p->cdt = dt == BF_DTYPE_F64                           ? BF_DTYPE_F64
             : (dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64) ? BF_DTYPE_INVALID
                                                          : BF_DTYPE_F32;
    if (p->cdt == BF_DTYPE_INVALID || p->m == 0 || p->n == 0 || p->k == 0) return;
    size_t es = bf_dtype_size(p->cdt);
    bf_conv_geom g = {.n = p->m,
                      .in_h = 1,
                      .in_w = 1,
                      .k_h = 1,
                      .k_w = 1,
                      .out_h = 1,
                      .out_w = 1,
                      .stride_h = 1,
                      .stride_w = 1,
                      .dil_h = 1,
                      .dil_w = 1,
                      .groups = 1};
    if (p->ta && !p->tb) { /* x = a [K,1,1,M], dy = b [K,1,1,N], dw [1,1,M,N] */
        p->op = BF_CONV_BWD_FILTER;
        g.n = p->k, g.in_c = g.k_in_c = p->m, g.out_c = p->n;
    } else if (p->tb) { /* dy = op(a) [M,K], w = b [1,1,N,K], dx [M,N] */
        p->op = BF_CONV_BWD_INPUT;
        g.in_c = g.k_in_c = p->n, g.out_c = p->k;
    } else { /* x = a [M,K], w = b [1,1,K,N], y [M,N] */
        p->op = BF_CONV_FWD;
        g.in_c = g.k_in_c = p->k, g.out_c = p->n;
    }
    p->g = g;
    p->conv_ws = bf_conv_cpu_workspace(p->op, &g, p->cdt, n_threads);
    size_t mk = (size_t)p->m * (size_t)p->k, kn = (size_t)p->k * (size_t)p->n;
    size_t mn = (size_t)p->m * (size_t)p->n;
    bool widen = dt != p->cdt;
    p->total = 0;
    p->off_a = widen ? add_piece(&p->total, mk * es) : 0;          /* a widened */
    p->off_b = widen ? add_piece(&p->total, kn * es) : 0;          /* b widened */
    p->off_c = widen ? add_piece(&p->total, mn * es) : 0;          /* product before rounding */
    p->off_t = p->ta && p->tb ? add_piece(&p->total, mk * es) : 0; /* a^T */
    p->off_g = add_piece(&p->total, p->conv_ws);
}

static size_t workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                            const bf_exec *ex) {
    (void)out;
    mm_plan p;
    make_plan(node, in[0].dims, in[1].dims, in[0].dtype, ex->n_threads, &p);
    return p.total;
}

typedef struct widen_job {
    const void *src;
    void *dst;
    bf_dtype from, to;
    int64_t n;
} widen_job;

enum { WIDEN_CHUNK = 16384 };

/* Convert a chunk between float16/bfloat16 and float32. */
static void widen_task(void *arg, int64_t t, int slot) {
    (void)slot;
    const widen_job *w = arg;
    int64_t i0 = t * WIDEN_CHUNK, i1 = BF_MIN(w->n, i0 + WIDEN_CHUNK);
    if (w->to == BF_DTYPE_F32) {
        const uint16_t *s = w->src;
        float *d = w->dst;
        if (w->from == BF_DTYPE_F16)
            for (int64_t i = i0; i < i1; i++) d[i] = bf_f16_to_f32(s[i]);
        else
            for (int64_t i = i0; i < i1; i++) d[i] = bf_bf16_to_f32(s[i]);
    } else {
        const float *s = w->src;
        uint16_t *d = w->dst;
        if (w->to == BF_DTYPE_F16)
            for (int64_t i = i0; i < i1; i++) d[i] = bf_f32_to_f16(s[i]);
        else
            for (int64_t i = i0; i < i1; i++) d[i] = bf_f32_to_bf16(s[i]);
    }
}

static void convert(const bf_exec *ex, const void *src, bf_dtype from, void *dst, bf_dtype to,
                    int64_t n) {
    widen_job w = {src, dst, from, to, n};
    bf_parallel_for(ex, (n + WIDEN_CHUNK - 1) / WIDEN_CHUNK, widen_task, &w);
}

static void run_float(const mm_plan *p, const void *a, const void *b, void *c, const bf_exec *ex) {
    char *ws = ex->workspace;
    size_t es = bf_dtype_size(p->cdt);
    if (p->dt != p->cdt) {
        convert(ex, a, p->dt, ws + p->off_a, p->cdt, p->m * p->k);
        convert(ex, b, p->dt, ws + p->off_b, p->cdt, p->k * p->n);
        a = ws + p->off_a, b = ws + p->off_b;
    }
    if (p->ta && p->tb) { /* a is [K,M]: a^T [M,K] */
        int64_t dims[2] = {p->k, p->m};
        int perm[2] = {1, 0};
        bf_permute(a, ws + p->off_t, 2, dims, perm, es, ex);
        a = ws + p->off_t;
    }
    void *dst = p->dt != p->cdt ? ws + p->off_c : c;
    bf_exec gex = *ex;
    gex.workspace = ws + p->off_g;
    gex.workspace_size = p->conv_ws;
    if (p->cdt == BF_DTYPE_F32)
        bf_conv_cpu_f32(p->op, &p->g, a, b, dst, &gex);
    else
        bf_conv_cpu_f64(p->op, &p->g, a, b, dst, &gex);
    if (p->dt != p->cdt) convert(ex, dst, p->cdt, c, p->dt, p->m * p->n);
}

/* ---- integers: exact, in int64 ----------------------------------------------------------- */

typedef struct int_job {
    const mm_plan *p;
    const void *a, *b;
    void *c;
    atomic_llong bad; /* the first row that overflowed, or LLONG_MAX */
} int_job;

static int64_t ld(const void *t, bool i32, int64_t i) {
    return i32 ? ((const int32_t *)t)[i] : ((const int64_t *)t)[i];
}

static void int_row_task(void *arg, int64_t i, int slot) {
    (void)slot;
    int_job *j = arg;
    const mm_plan *p = j->p;
    bool i32 = p->dt == BF_DTYPE_I32;
    for (int64_t col = 0; col < p->n; col++) {
        int64_t acc = 0;
        bool ok = true;
        for (int64_t t = 0; t < p->k && ok; t++) {
            int64_t x = ld(j->a, i32, p->ta ? t * p->m + i : i * p->k + t);
            int64_t y = ld(j->b, i32, p->tb ? col * p->k + t : t * p->n + col), xy;
            ok = !__builtin_mul_overflow(x, y, &xy) && !__builtin_add_overflow(acc, xy, &acc);
        }
        if (ok && i32) ok = acc >= INT32_MIN && acc <= INT32_MAX;
        if (!ok) {
            long long cur = atomic_load(&j->bad);
            while (i < cur && !atomic_compare_exchange_weak(&j->bad, &cur, (long long)i)) {
            }
            return;
        }
        if (i32)
            ((int32_t *)j->c)[i * p->n + col] = (int32_t)acc;
        else
            ((int64_t *)j->c)[i * p->n + col] = acc;
    }
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    mm_plan p;
    make_plan(node, in[0]->dims, in[1]->dims, in[0]->dtype, ex->n_threads, &p);
    bf_tensor *c = out[0];
    if (c->numel == 0) return BF_OK;
    if (p.k == 0) { /* an empty sum: zeros, as TF's SetZeroFunctor */
        memset(c->data, 0, c->nbytes);
        return BF_OK;
    }
    if (p.cdt != BF_DTYPE_INVALID) {
        if (ex->workspace_size < p.total)
            return bf_err(err, BF_EINTERNAL, "internal", "MatMul: workspace %zu < %zu",
                          ex->workspace_size, p.total);
        run_float(&p, in[0]->data, in[1]->data, c->data, ex);
        return BF_OK;
    }
    int_job j = {.p = &p, .a = in[0]->data, .b = in[1]->data, .c = c->data};
    atomic_init(&j.bad, LLONG_MAX);
    bf_parallel_for(ex, p.m, int_row_task, &j);
    long long bad = atomic_load(&j.bad);
    if (bad != LLONG_MAX)
        return bf_arr_err(err, BF_EDTYPE, "dtype_mismatch", "product", NULL,
                          "row %lld of the product overflows %s", bad, bf_dtype_name(p.dt));
    return BF_OK;
}

/* ---- the GPU (cuBLAS, matmul_cuda.h) ------------------------------------------------------ */

static const char *gpu_unsupported(const bf_node *node, const bf_port_info *in) {
    (void)node;
    bf_dtype dt = in[0].dtype ? in[0].dtype : in[1].dtype;
    if (dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64)
        return "integer MatMul on the CPU (exact, overflow-checked)";
    if (dt != BF_DTYPE_F32 && dt != BF_DTYPE_F64 && dt != BF_DTYPE_F16 && dt != BF_DTYPE_BF16)
        return "dtype not known before running";
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < in[k].rank && i < 2; i++)
            if (in[k].dims[i] > INT_MAX) return "a dimension of 2^31 or more (cuBLAS takes int)";
    return NULL;
}

static bf_status run_cuda(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                          const bf_exec *ex, bf_error *err) {
    bool ta = node->attrs[A_TA].b, tb = node->attrs[A_TB].b;
    const bf_tensor *a = in[0], *b = in[1];
    bf_tensor *c = out[0];
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1], n = b->dims[tb ? 0 : 1];
    if (c->numel == 0) return BF_OK;
    if (k == 0) { /* an empty sum: zeros */
        bf_device *dev = ex->device;
        bf_status st = dev->ops->memset0(dev, c->data, c->nbytes, ex->stream, err);
        if (st == BF_OK && ex->note) snprintf(ex->note, ex->note_size, "empty sum: zeros");
        return st;
    }
    return bf_matmul_cuda(m, n, k, ta, tb, c->dtype, a->data, b->data, c->data, ex, err);
}

/* ---- gradient (math_grad.py _MatMulGrad) ------------------------------------------------ */

/* MatMul(x, y) with TF's transposes, named `name`. */
static const char *mm(bf_grad_ctx *g, const char *name, const char *x, const char *y, bool tx,
                      bool ty) {
    char attrs_json[80];
    snprintf(attrs_json, sizeof(attrs_json), "{\"transpose_a\":%s,\"transpose_b\":%s}",
             tx ? "true" : "false", ty ? "true" : "false");
    return bf_grad_add(g, name, "MatMul", attrs_json, "a", x, "b", y, NULL);
}

static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy) return BF_OK;
    const bf_node *node = bf_grad_node(g);
    bool ta = node->attrs[A_TA].b, tb = node->attrs[A_TB].b;
    const char *a = bf_grad_input(g, 0), *b = bf_grad_input(g, 1);
    if (bf_grad_wants(g, 0)) {
        const char *da = !ta   ? mm(g, "da", dy, b, false, !tb)  /* dy b^T or dy b */
                         : !tb ? mm(g, "da", b, dy, false, true) /* b dy^T */
                               : mm(g, "da", b, dy, true, true); /* b^T dy^T */
        if (da) bf_grad_set(g, 0, da);
    }
    if (bf_grad_wants(g, 1)) {
        const char *db = !tb   ? mm(g, "db", a, dy, !ta, false)  /* a^T dy or a dy */
                         : !ta ? mm(g, "db", dy, a, true, false) /* dy^T a */
                               : mm(g, "db", dy, a, true, true); /* dy^T a^T */
        if (db) bf_grad_set(g, 1, db);
    }
    return BF_OK;
}

const bf_block_desc bf_block_mat_mul = {
    .type = "MatMul",
    .category = "math",
    .synopsis = "product = op(a) x op(b), op = transpose when transpose_a / transpose_b",
    .doc = "TensorFlow's MatMul: the matrix product of two rank-2 tensors of one dtype, either "
           "transposed first. float16 and bfloat16 are multiplied in float32 and rounded once; "
           "int32 and int64 are exact (overflow is an error). float32/float64 run on the "
           "packed, threaded GEMM of the convolutions; on a GPU every float dtype runs on "
           "cuBLAS.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .workspace_cpu = workspace_cpu,
    .run_cpu = run_cpu,
    .gpu_unsupported = gpu_unsupported,
    .run_cuda = run_cuda,
    .gradient = gradient,
};
