/*
 * cwise.c - the shape rules and the loop drivers of the elementwise math blocks (cwise.h).
 */
#include "cwise.h"

#include "half.h"

#include <stdio.h>
#include <string.h>

const bf_port_desc bf_cw_xy_all[2] = {
    {"x", BF_DT_ALL, 0, "left operand"},
    {"y", BF_DT_ALL, 0, "right operand, broadcast against x (TensorFlow's rules)"},
};
const bf_port_desc bf_cw_xy_floats[2] = {
    {"x", BF_DT_FLOATS, 0, "left operand"},
    {"y", BF_DT_FLOATS, 0, "right operand, broadcast against x (TensorFlow's rules)"},
};
const bf_port_desc bf_cw_z_all[1] = {{"z", BF_DT_ALL, 0, "the result, of the broadcast shape"}};
const bf_port_desc bf_cw_z_floats[1] = {
    {"z", BF_DT_FLOATS, 0, "the result, of the broadcast shape"}};
const bf_port_desc bf_cw_x_all[1] = {{"x", BF_DT_ALL, 0, "any tensor"}};
const bf_port_desc bf_cw_x_floats[1] = {{"x", BF_DT_FLOATS, 0, "any tensor"}};
const bf_port_desc bf_cw_y_all[1] = {{"y", BF_DT_ALL, 0, "the result, of x's shape"}};
const bf_port_desc bf_cw_y_floats[1] = {{"y", BF_DT_FLOATS, 0, "the result, of x's shape"}};
const bf_port_desc bf_cw_grad_inputs[2] = {
    {"y", BF_DT_FLOATS, 0, "the forward block's output"},
    {"dy", BF_DT_FLOATS, 0, "the gradient arriving at that output (y's shape)"},
};

/* Work per task and the size from which a kernel goes parallel. */
#define CHUNK ((int64_t)16384)
#define PARALLEL_MIN ((int64_t)65536)
/* Elements converted at a time for float16 and bfloat16. */
#define HALF_CHUNK 256

/* ---- shapes ------------------------------------------------------------------------------- */

char *bf_cw_shape_str(int rank, const int64_t *dims, char *buf, size_t size) {
    if (rank < 0) {
        snprintf(buf, size, "<unknown>");
        return buf;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++) {
        if (dims[i] < 0) n += (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "");
        else n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

bool bf_cw_broadcast_shape(const bf_port_info *x, const bf_port_info *y, int *rank,
                           int64_t *dims) {
    if (x->rank < 0 || y->rank < 0) {
        *rank = -1;
        return true;
    }
    int r = BF_MAX(x->rank, y->rank);
    *rank = r;
    for (int i = 0; i < r; i++) {
        int64_t a = i < r - x->rank ? 1 : x->dims[i - (r - x->rank)];
        int64_t b = i < r - y->rank ? 1 : y->dims[i - (r - y->rank)];
        if (a >= 0 && b >= 0) {
            if (a == b || b == 1) dims[i] = a;
            else if (a == 1) dims[i] = b;
            else return false;
        } else {
            /* TensorFlow's shape function: a known dim above 1 wins (the other must match or
             * be 1, checked when it is known); a known 1 or 0 against an unknown dim, or two
             * unknown dims, give an unknown dim. */
            dims[i] = a > 1 ? a : b > 1 ? b : -1;
        }
    }
    return true;
}

/* TensorFlow's words for a dtype mismatch between input 0 and input k. */
static bf_status dtype_mismatch(const bf_node *node, const char *port, int k, bf_dtype want,
                                bf_dtype got, bf_error *err) {
    bf_err_at(err, port, NULL);
    return bf_err(err, BF_EDTYPE, "dtype_mismatch",
                  "cannot compute %s as input #%d(zero-based) was expected to be a %s tensor "
                  "but is a %s tensor",
                  node->desc->type, k, bf_dtype_name(want), bf_dtype_name(got));
}

bf_status bf_cw_broadcast_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                                bf_error *err) {
    const bf_binary_impl *impl = node->desc->impl;
    const bf_port_info *x = &in[0], *y = &in[1];
    if (x->dtype && y->dtype && x->dtype != y->dtype)
        return dtype_mismatch(node, node->desc->inputs[1].name, 1, x->dtype, y->dtype, err);
    bf_dtype dt = impl->compare ? BF_DTYPE_I32 : x->dtype ? x->dtype : y->dtype;
    int rank;
    int64_t dims[BF_MAX_RANK];
    if (!bf_cw_broadcast_shape(x, y, &rank, dims)) {
        char a[128], b[128];
        bf_err_at(err, node->desc->inputs[1].name, NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "Incompatible shapes: %s vs. %s",
                      bf_cw_shape_str(x->rank, x->dims, a, sizeof(a)),
                      bf_cw_shape_str(y->rank, y->dims, b, sizeof(b)));
    }
    bf_port_set(out, dt, rank, rank >= 0 ? dims : NULL);
    return BF_OK;
}

bf_status bf_cw_same_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                           bf_error *err) {
    const bf_port_info *a = &in[0], *b = &in[1];
    if (a->dtype && b->dtype && a->dtype != b->dtype)
        return dtype_mismatch(node, node->desc->inputs[1].name, 1, a->dtype, b->dtype, err);
    bf_dtype dt = a->dtype ? a->dtype : b->dtype;
    if (a->rank < 0 || b->rank < 0) {
        const bf_port_info *k = a->rank >= 0 ? a : b;
        bf_port_set(out, dt, k->rank, k->rank >= 0 ? k->dims : NULL);
        return BF_OK;
    }
    bool same = a->rank == b->rank;
    for (int i = 0; same && i < a->rank; i++)
        same = a->dims[i] < 0 || b->dims[i] < 0 || a->dims[i] == b->dims[i];
    if (!same) {
        char sa[128], sb[128];
        bf_err_at(err, node->desc->inputs[1].name, NULL);
        return bf_err(err, BF_ESHAPE, "shape_mismatch",
                      "Inputs to operation %s of type %s must have the same size and shape.  "
                      "Input 0: %s != input 1: %s",
                      node->id ? node->id : node->desc->type, node->desc->type,
                      bf_cw_shape_str(a->rank, a->dims, sa, sizeof(sa)),
                      bf_cw_shape_str(b->rank, b->dims, sb, sizeof(sb)));
    }
    bf_port_set(out, dt, a->rank, a->dims);
    for (int i = 0; i < a->rank; i++)
        if (out->dims[i] < 0) out->dims[i] = b->dims[i];
    return BF_OK;
}

bf_status bf_cw_unary_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                            bf_error *err) {
    (void)node, (void)err;
    bf_port_set(out, in[0].dtype, in[0].rank, in[0].rank >= 0 ? in[0].dims : NULL);
    return BF_OK;
}

/* ---- half precision through the float32 loops --------------------------------------------- */

static void to_float(bf_dtype dt, const void *src, float *dst, int64_t n) {
    const uint16_t *s = src;
    if (dt == BF_DTYPE_F16)
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f16_to_f32(s[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = bf_bf16_to_f32(s[i]);
}

static void from_float(bf_dtype dt, const float *src, void *dst, int64_t n) {
    uint16_t *d = dst;
    if (dt == BF_DTYPE_F16)
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_f16(src[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = bf_f32_to_bf16(src[i]);
}

static bool is_half(bf_dtype dt) { return dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16; }
static bool is_int(bf_dtype dt) { return dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64; }

/* ---- binary ------------------------------------------------------------------------------- */

/*
 * The output as rows of runs: dims collapsed (dims of 1 dropped, neighbours that broadcast
 * alike merged), strides in elements per collapsed dim (0 where that operand is broadcast).
 * The last collapsed dim is the run, its operand layout one of BF_CW_VV, VS, SV. When that
 * dim is short (below SHORT_RUN, C elements) the last two dims make one run instead, in which
 * one operand is not contiguous:
 * - VP, PV: it repeats with period C (y or x [C] against [R, C]: a bias, a scale);
 * - VE, EV: each of its elements stands for C of the run (y or x [R, 1] against [R, C]: a
 *   per-row statistic).
 * Such a run is computed by VV against a buffer holding that operand spread out (filled once
 * for a repeating operand, per chunk for a stretched one), rather than by R calls of C
 * elements.
 */
enum { L_VP = 3, L_PV = 4, L_VE = 5, L_EV = 6 };
#define SHORT_RUN 256
#define REP_ELEMS 1024 /* elements of the repeated operand's buffer (8 KiB in float64) */

typedef struct plan {
    int rank;
    int64_t dims[BF_MAX_RANK], xs[BF_MAX_RANK], ys[BF_MAX_RANK];
    int layout;
    int64_t inner, rows;
    int64_t period; /* VP, PV, VE, EV: C */
    int64_t piece;  /* elements per task when a run is split: CHUNK, a multiple of period */
} plan;

static void make_plan(const bf_tensor *x, const bf_tensor *y, const bf_tensor *z, plan *p) {
    int r = z->rank, k = 0, kinds[BF_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t a = i < r - x->rank ? 1 : x->dims[i - (r - x->rank)];
        int64_t b = i < r - y->rank ? 1 : y->dims[i - (r - y->rank)];
        int64_t d = z->dims[i];
        if (d == 1) continue;
        int kind = (a == d ? 1 : 0) | (b == d ? 2 : 0); /* 1: x runs along, 2: y, 3: both */
        if (k > 0 && kinds[k - 1] == kind) {
            p->dims[k - 1] *= d;
        } else {
            kinds[k] = kind;
            p->dims[k++] = d;
        }
    }
    if (k == 0) { /* a single element */
        kinds[0] = 3;
        p->dims[k++] = 1;
    }
    int64_t sx = 1, sy = 1;
    for (int i = k - 1; i >= 0; i--) {
        p->xs[i] = kinds[i] & 1 ? sx : 0;
        p->ys[i] = kinds[i] & 2 ? sy : 0;
        if (kinds[i] & 1) sx *= p->dims[i];
        if (kinds[i] & 2) sy *= p->dims[i];
    }
    int last = kinds[k - 1];
    p->layout = last == 3 ? BF_CW_VV : last == 1 ? BF_CW_VS : BF_CW_SV;
    p->inner = p->dims[k - 1];
    p->period = 0;
    p->piece = CHUNK;
    /* (kinds[k - 2] differs from last, or they would have merged; neither is 0, which would
     * be a dim of 1 in both, dropped) */
    bool repeat = k >= 2 && last == 3, stretch = k >= 2 && last != 3 && kinds[k - 2] == 3;
    if (p->inner < SHORT_RUN && (repeat || stretch)) {
        if (repeat) p->layout = kinds[k - 2] == 1 ? L_VP : L_PV;
        else p->layout = last == 1 ? L_VE : L_EV;
        p->period = p->inner;
        p->inner *= p->dims[k - 2];
        p->piece = CHUNK / p->period * p->period;
        k--;
    }
    p->rank = k;
    p->rows = z->numel / p->inner;
}

typedef struct bjob {
    const plan *p;
    const bf_binary_impl *impl;
    bf_dtype dt;           /* the operands' dtype */
    const char *x, *y;
    char *z;
    size_t es, zs;         /* element sizes of the operands and of z */
    int64_t rows_per_task; /* > 0: tasks of whole rows; else pieces_per_row pieces per row */
    int64_t pieces_per_row;
    /* integer failure (one thread): flat output index and the operands there */
    int64_t fail, fail_a, fail_b;
} bjob;

static bf_cw_loop2 loop_of(const bf_binary_impl *impl, bf_dtype dt, int layout) {
    switch (dt) {
    case BF_DTYPE_F64: return impl->f64[layout];
    case BF_DTYPE_I32: return impl->i32[layout];
    case BF_DTYPE_I64: return impl->i64[layout];
    default: return impl->f32[layout]; /* float32, and the halves through float32 */
    }
}

/* One run of n elements at x, y, z with layout VV, VS or SV; -1 or the failing index. */
static int64_t run2(const bjob *j, const char *x, const char *y, char *z, int64_t n, int layout) {
    bf_cw_loop2 f = loop_of(j->impl, j->dt, layout);
    if (!is_half(j->dt)) return f(x, y, z, n);
    float xb[HALF_CHUNK], yb[HALF_CHUNK], zb[HALF_CHUNK];
    if (layout == BF_CW_SV) to_float(j->dt, x, xb, 1);
    if (layout == BF_CW_VS) to_float(j->dt, y, yb, 1);
    for (int64_t o = 0; o < n; o += HALF_CHUNK) {
        int64_t m = BF_MIN(HALF_CHUNK, n - o);
        if (layout != BF_CW_SV) to_float(j->dt, x + o * 2, xb, m);
        if (layout != BF_CW_VS) to_float(j->dt, y + o * 2, yb, m);
        if (j->impl->compare) {
            f(xb, yb, z + o * 4, m);
        } else {
            f(xb, yb, zb, m);
            from_float(j->dt, zb, z + o * 2, m);
        }
    }
    return -1;
}

/* How an operand moves along a run: stays put, runs along, repeats, is stretched. */
enum { H_SCALAR, H_VECTOR, H_REPEAT, H_STRETCH };

static int how_x(int layout) {
    return layout == BF_CW_SV ? H_SCALAR : layout == L_PV ? H_REPEAT
           : layout == L_EV   ? H_STRETCH : H_VECTOR;
}
static int how_y(int layout) {
    return layout == BF_CW_VS ? H_SCALAR : layout == L_VP ? H_REPEAT
           : layout == L_VE   ? H_STRETCH : H_VECTOR;
}

/* Where element e of a run whose operand starts at offset `base` is. */
static int64_t at(int64_t base, int64_t e, int how, int64_t period) {
    switch (how) {
    case H_VECTOR: return base + e;
    case H_REPEAT: return base + e % period;
    case H_STRETCH: return base + e / period;
    default: return base;
    }
}

/* buf[i] = src[i / per] for i < n: each of n / per elements `per` times (es bytes each). */
static void stretch(char *buf, const char *src, int64_t n, int64_t per, size_t es) {
    for (int64_t r = 0; r * per < n; r++) {
        int64_t c = BF_MIN(per, n - r * per);
        char *d = buf + r * per * (int64_t)es;
        if (es == 4) {
            uint32_t v;
            memcpy(&v, src + r * 4, 4);
            for (int64_t i = 0; i < c; i++) memcpy(d + i * 4, &v, 4);
        } else {
            for (int64_t i = 0; i < c; i++) memcpy(d + i * (int64_t)es, src + r * (int64_t)es, es);
        }
    }
}

/* Elements [e0, e1) of the run whose operands start at x offset xo and y offset yo (e0 a
 * multiple of the period); -1 or the failing element (counted from e0). */
static int64_t span(const bjob *j, int64_t xo, int64_t yo, char *z, int64_t e0, int64_t e1) {
    const plan *p = j->p;
    int64_t es = (int64_t)j->es, n = e1 - e0, per = p->period;
    int hx = how_x(p->layout), hy = how_y(p->layout);
    if (p->layout < L_VP)
        return run2(j, j->x + at(xo, e0, hx, per) * es, j->y + at(yo, e0, hy, per) * es, z, n,
                    p->layout);
    /* One operand through buf, spread out, the other contiguous from element e0. */
    bool x_buf = hx == H_REPEAT || hx == H_STRETCH;
    const char *src = x_buf ? j->x + xo * es : j->y + yo * es;
    _Alignas(64) char buf[REP_ELEMS * 8];
    int64_t m = BF_MIN(per * (REP_ELEMS / per), (n + per - 1) / per * per);
    bool repeat = p->layout == L_VP || p->layout == L_PV;
    if (repeat)
        for (int64_t r = 0; r < m; r += per) memcpy(buf + r * es, src, (size_t)(per * es));
    for (int64_t o = 0; o < n; o += m) {
        int64_t c = BF_MIN(m, n - o), f;
        if (!repeat) stretch(buf, src + (e0 + o) / per * es, c, per, j->es);
        if (x_buf) f = run2(j, buf, j->y + (yo + e0 + o) * es, z + o * (int64_t)j->zs, c, BF_CW_VV);
        else f = run2(j, j->x + (xo + e0 + o) * es, buf, z + o * (int64_t)j->zs, c, BF_CW_VV);
        if (f >= 0) return o + f;
    }
    return -1;
}

/* Rows [r0, r1) of the output, each from element e0 to e1 of the row. */
static void rows2(bjob *j, int64_t r0, int64_t r1, int64_t e0, int64_t e1) {
    const plan *p = j->p;
    int outer = p->rank - 1;
    int64_t idx[BF_MAX_RANK], xo = 0, yo = 0, rem = r0;
    for (int k = outer - 1; k >= 0; k--) {
        idx[k] = rem % p->dims[k];
        rem /= p->dims[k];
        xo += idx[k] * p->xs[k];
        yo += idx[k] * p->ys[k];
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t ze = r * p->inner + e0;
        int64_t f = span(j, xo, yo, j->z + ze * (int64_t)j->zs, e0, e1);
        if (f >= 0) {
            j->fail = ze + f;
            j->fail_a = at(xo, e0 + f, how_x(p->layout), p->period);
            j->fail_b = at(yo, e0 + f, how_y(p->layout), p->period);
            return;
        }
        for (int k = outer - 1; k >= 0; k--) {
            xo += p->xs[k];
            yo += p->ys[k];
            if (++idx[k] < p->dims[k]) break;
            xo -= p->xs[k] * p->dims[k];
            yo -= p->ys[k] * p->dims[k];
            idx[k] = 0;
        }
    }
}

static void task2(void *arg, int64_t t, int slot) {
    (void)slot;
    bjob *j = arg;
    const plan *p = j->p;
    if (j->rows_per_task > 0) {
        int64_t r0 = t * j->rows_per_task;
        rows2(j, r0, BF_MIN(r0 + j->rows_per_task, p->rows), 0, p->inner);
    } else {
        int64_t r = t / j->pieces_per_row, e0 = (t % j->pieces_per_row) * p->piece;
        rows2(j, r, r + 1, e0, BF_MIN(e0 + p->piece, p->inner));
    }
}

static int64_t int_elem(const bf_tensor *t, int64_t i) {
    return t->dtype == BF_DTYPE_I32 ? ((const int32_t *)t->data)[i]
                                    : ((const int64_t *)t->data)[i];
}

/* The error of integer element `flat` of z = op(a, b) (or op(a) when unary). */
static bf_status int_error(const bf_node *node, bf_dtype dt, int code, int64_t flat,
                           int64_t a, const int64_t *b, bf_error *err) {
    bf_err_at(err, node->desc->outputs[0].name, NULL);
    if (code == BF_CW_DIV_ZERO)
        return bf_err(err, BF_EINVAL, "division_by_zero", "Integer division by zero");
    if (b)
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "element %lld: %s of %lld and %lld "
                      "overflows %s", (long long)flat, node->desc->type, (long long)a,
                      (long long)*b, bf_dtype_name(dt));
    return bf_err(err, BF_EDTYPE, "dtype_mismatch", "element %lld: %s of %lld overflows %s",
                  (long long)flat, node->desc->type, (long long)a, bf_dtype_name(dt));
}

bf_status bf_cw_binary_run(const bf_node *node, const bf_tensor *const *in,
                           bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    const bf_tensor *x = in[0], *y = in[1];
    bf_tensor *z = out[0];
    if (z->numel == 0) return BF_OK;
    plan p;
    make_plan(x, y, z, &p);
    bjob j = {.p = &p, .impl = node->desc->impl, .dt = x->dtype, .x = x->data, .y = y->data,
              .z = z->data, .es = bf_dtype_size(x->dtype), .zs = bf_dtype_size(z->dtype),
              .fail = -1};
    BF_ASSERT(loop_of(j.impl, j.dt, BF_CW_VV) != NULL);
    int64_t min = is_half(j.dt) ? PARALLEL_MIN / 4 : PARALLEL_MIN;
    bool parallel = !is_int(j.dt) && z->numel > min && ex && ex->n_threads > 1;
    if (!parallel) {
        j.rows_per_task = p.rows;
        task2(&j, 0, 0);
    } else if (p.inner >= p.piece) {
        j.pieces_per_row = (p.inner + p.piece - 1) / p.piece;
        bf_parallel_for(ex, p.rows * j.pieces_per_row, task2, &j);
    } else {
        j.rows_per_task = CHUNK / p.inner;
        bf_parallel_for(ex, (p.rows + j.rows_per_task - 1) / j.rows_per_task, task2, &j);
    }
    if (j.fail >= 0) {
        int64_t a = int_elem(x, j.fail_a), b = int_elem(y, j.fail_b), v;
        int code = j.impl->iop(a, b, &v);
        return int_error(node, z->dtype, code ? code : BF_CW_OVERFLOW, j.fail, a, &b, err);
    }
    return BF_OK;
}

/* ---- unary -------------------------------------------------------------------------------- */

typedef struct ujob {
    const bf_unary_impl *impl;
    bf_cw_loop1 f;
    bf_dtype dt;
    const char *x;
    char *y;
    size_t es;
    int64_t n, per_task, fail;
} ujob;

static void task1(void *arg, int64_t t, int slot) {
    (void)slot;
    ujob *j = arg;
    int64_t o = t * j->per_task, n = BF_MIN(j->per_task, j->n - o);
    if (!is_half(j->dt)) {
        int64_t f = j->f(j->x + o * (int64_t)j->es, j->y + o * (int64_t)j->es, n);
        if (f >= 0) j->fail = o + f;
        return;
    }
    float b[HALF_CHUNK];
    for (int64_t i = 0; i < n; i += HALF_CHUNK) {
        int64_t m = BF_MIN(HALF_CHUNK, n - i);
        to_float(j->dt, j->x + (o + i) * 2, b, m);
        j->f(b, b, m);
        from_float(j->dt, b, j->y + (o + i) * 2, m);
    }
}

bf_status bf_cw_unary_run(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                          const bf_exec *ex, bf_error *err) {
    const bf_unary_impl *impl = node->desc->impl;
    const bf_tensor *x = in[0];
    ujob j = {.impl = impl, .dt = x->dtype, .x = x->data, .y = out[0]->data,
              .es = bf_dtype_size(x->dtype), .n = x->numel, .fail = -1};
    j.f = x->dtype == BF_DTYPE_F64 ? impl->f64 : x->dtype == BF_DTYPE_I32 ? impl->i32
          : x->dtype == BF_DTYPE_I64 ? impl->i64 : impl->f32;
    BF_ASSERT(j.f != NULL);
    if (j.n == 0) return BF_OK;
    bool costly = impl->heavy || is_half(j.dt);
    if (!is_int(j.dt) && j.n > (costly ? PARALLEL_MIN / 8 : PARALLEL_MIN) && ex &&
        ex->n_threads > 1) {
        j.per_task = costly ? CHUNK / 4 : CHUNK;
        bf_parallel_for(ex, (j.n + j.per_task - 1) / j.per_task, task1, &j);
    } else {
        j.per_task = j.n;
        task1(&j, 0, 0);
    }
    if (j.fail >= 0) {
        int64_t a = int_elem(x, j.fail), v;
        int code = impl->iop(a, &v);
        return int_error(node, x->dtype, code ? code : BF_CW_OVERFLOW, j.fail, a, NULL, err);
    }
    return BF_OK;
}

/* ---- gradients ---------------------------------------------------------------------------- */

void bf_cw_grad_reduce(bf_grad_ctx *g, int k, const char *name, const char *ref) {
    if (!ref || !bf_grad_wants(g, k)) return;
    const char *r = bf_grad_unbroadcast(g, name, ref, bf_grad_output_info(g, 0), k);
    if (r) bf_grad_set(g, k, r);
}

bf_status bf_cw_grad_by_block(bf_grad_ctx *g, const char *type, const char *out_port,
                              const char *dy_port) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    bf_grad_set(g, 0, bf_grad_add(g, "grad", type, NULL, out_port, bf_grad_output(g, 0),
                                  dy_port, dy, NULL));
    return BF_OK;
}

bf_status bf_cw_grad_times(bf_grad_ctx *g, const char *type, const char *port) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *f = bf_grad_add(g, "grad_factor", type, NULL, port, bf_grad_input(g, 0), NULL);
    if (f) bf_grad_set(g, 0, bf_grad_add(g, "grad", "Mul", NULL, "x", dy, "y", f, NULL));
    return BF_OK;
}
