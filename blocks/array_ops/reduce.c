/*
 * reduce.c - the reductions shared by Sum, Mean, Max, Min and Prod (reduce.h): the ports and
 * checks of TF's ReductionOp, the engine, and the gradients of Sum, Mean, Max and Min.
 */
#include "reduce.h"
#include "array_util.h"
#include "half.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

const bf_port_desc bf_reduce_inputs[2] = {
    {"input", BF_DT_ALL, 0, "the tensor to reduce"},
    {"reduction_indices", BF_DT_INTS, BF_PORT_HOST | BF_PORT_OPTIONAL,
     "the axes to reduce (scalar or vector, negative counts from the end); unconnected: all"},
};
const bf_port_desc bf_reduce_outputs[1] = {{"output", BF_DT_ALL, 0, "the reduced tensor"}};
const bf_attr_desc bf_reduce_attrs[1] = {
    {"keep_dims", BF_ATTR_BOOL, "false", NULL, 0, "If true, the reduced axes stay, with size 1."},
};

/* ---- axes ------------------------------------------------------------------------------- */

/*
 * The axes mask of `rank` dims from the host value `axes` (NULL: every axis), checked as
 * TF's ReductionHelper::Simplify does, in its words. Errors name reduction_indices.
 */
static bf_status axes_mask(const bf_tensor *axes, int rank, bool *mask, bf_error *err) {
    for (int k = 0; k < rank; k++) mask[k] = axes == NULL;
    if (!axes) return BF_OK;
    for (int64_t i = 0; i < axes->numel; i++) {
        int64_t a = bf_host_int(axes, i);
        if (a < -rank || a >= rank)
            return bf_arr_err(
                err, BF_ESHAPE, "bad_shape", "reduction_indices", NULL,
                "Invalid reduction dimension (%" PRId64 " for input with %d dimension(s)", a, rank);
        int k = (int)((a + rank) % rank);
        if (mask[k])
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "reduction_indices", NULL,
                              "Invalid reduction arguments: Axes contains duplicate dimension: "
                              "%d",
                              k);
        mask[k] = true;
    }
    return BF_OK;
}

bf_status bf_reduce_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                          bf_error *err) {
    const bf_port_info *x = &in[0], *ax = &in[1];
    bool keep = node->attrs[0].b, absent = ax->rank == BF_PORT_ABSENT_RANK;
    if (!absent && ax->rank > 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "reduction_indices", NULL,
                          "Shape must be at most rank 1 but is rank %d", ax->rank);
    const bf_tensor *axes = absent ? NULL : ax->value;
    if (!absent && !axes) { /* axes known only when running */
        if (keep && x->rank >= 0)
            bf_port_set(&out[0], x->dtype, x->rank, NULL);
        else
            bf_port_set(&out[0], x->dtype, -1, NULL);
        return BF_OK;
    }
    if (x->rank < 0) { /* every axis of a tensor of unknown rank: a scalar unless kept */
        bf_port_set(&out[0], x->dtype, absent && !keep ? 0 : -1, NULL);
        return BF_OK;
    }
    bool mask[BF_MAX_RANK];
    bf_status st = axes_mask(axes, x->rank, mask, err);
    if (st) return st;
    int64_t dims[BF_MAX_RANK];
    int r = 0;
    for (int k = 0; k < x->rank; k++)
        if (!mask[k])
            dims[r++] = x->dims[k];
        else if (keep)
            dims[r++] = 1;
    bf_port_set(&out[0], x->dtype, r, dims);
    return BF_OK;
}

/* ---- the engine: plan ------------------------------------------------------------------- */

enum {
    CHUNK = 32768, /* elements of the reduced range one accumulator takes before merging */
    IB = 256,      /* inner (kept) elements one row accumulator holds */
};

typedef struct red_plan {
    bf_reduce_kind kind;
    bf_dtype dt;
    bool is_int;
    int nr;                  /* alternating runs of kept and reduced dims */
    int64_t d[BF_MAX_RANK];  /* run sizes */
    bool red[BF_MAX_RANK];   /* run is reduced */
    int64_t st[BF_MAX_RANK]; /* run strides (elements) */
    int64_t O, R;            /* outputs, reduced elements per output */
    bool inner_red;          /* the innermost run is reduced (mode A), else kept (mode B) */
    int64_t L;               /* innermost run's size */
    int64_t G, NI;           /* mode B: output rows (O / L) and blocks of IB along them */
    int64_t per_chunk;       /* mode A: elements, mode B: rows of the reduced range per chunk */
    int64_t C;               /* chunks */
    bool split;              /* parallel over chunks too (partials in the workspace) */
    int64_t units;           /* mode A: O; mode B: G * NI */
    size_t ws;               /* bytes of partials */
} red_plan;

typedef struct acc {
    double s, c;
    int64_t i;
    bool bad;
} acc;

typedef struct vacc {
    double s[IB], c[IB];
    int64_t i[IB];
    bool bad;
} vacc;

static void make_plan(bf_reduce_kind kind, bf_dtype dt, int rank, const int64_t *dims,
                      const bool *mask, int n_threads, red_plan *p) {
    memset(p, 0, sizeof(*p));
    p->kind = kind, p->dt = dt, p->is_int = dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64;
    p->O = 1, p->R = 1;
    for (int k = 0; k < rank; k++) {
        if (dims[k] == 1) continue;
        if (p->nr > 0 && p->red[p->nr - 1] == mask[k]) {
            p->d[p->nr - 1] *= dims[k];
        } else {
            p->d[p->nr] = dims[k], p->red[p->nr] = mask[k];
            p->nr++;
        }
        if (mask[k])
            p->R *= dims[k];
        else
            p->O *= dims[k];
    }
    int64_t s = 1;
    for (int r = p->nr - 1; r >= 0; r--) p->st[r] = s, s *= p->d[r];
    if (p->nr == 0 || p->O == 0 || p->R <= 1) return; /* copy, nothing, or identities */
    p->inner_red = p->red[p->nr - 1];
    p->L = p->d[p->nr - 1];
    if (p->inner_red) {
        p->per_chunk = CHUNK;
        p->units = p->O;
    } else {
        p->G = p->O / p->L;
        p->NI = (p->L + IB - 1) / IB;
        p->per_chunk = BF_MAX(1, CHUNK / BF_MIN(p->L, IB));
        p->units = p->G * p->NI;
    }
    p->C = (p->R + p->per_chunk - 1) / p->per_chunk;
    if (n_threads < 1) n_threads = 1;
    p->split = p->C > 1 && p->units < 2 * (int64_t)n_threads;
    if (p->split) p->ws = (size_t)(p->units * p->C) * (p->inner_red ? sizeof(acc) : sizeof(vacc));
}

/* Offset of run-ordered index `idx` over the runs of kind `red` (skipping run `skip`). */
static int64_t run_offset(const red_plan *p, int64_t idx, bool red, int skip) {
    int64_t off = 0;
    for (int r = p->nr - 1; r >= 0; r--) {
        if (p->red[r] != red || r == skip) continue;
        off += (idx % p->d[r]) * p->st[r];
        idx /= p->d[r];
    }
    return off;
}

/* ---- the engine: accumulators ------------------------------------------------------------ */

static int64_t int_lowest(bf_dtype dt) { return dt == BF_DTYPE_I32 ? INT32_MIN : INT64_MIN; }
static int64_t int_highest(bf_dtype dt) { return dt == BF_DTYPE_I32 ? INT32_MAX : INT64_MAX; }

static void init_vals(const red_plan *p, double *s, int64_t *i) {
    switch (p->kind) {
    case BF_REDUCE_PROD: *s = 1, *i = 1; break;
    case BF_REDUCE_MAX: *s = -INFINITY, *i = int_lowest(p->dt); break;
    case BF_REDUCE_MIN: *s = INFINITY, *i = int_highest(p->dt); break;
    default: *s = 0, *i = 0; break;
    }
}

static void acc_init(const red_plan *p, acc *a) {
    a->c = 0, a->bad = false;
    init_vals(p, &a->s, &a->i);
}

static void vacc_init(const red_plan *p, vacc *v, int64_t n) {
    double s;
    int64_t i;
    init_vals(p, &s, &i);
    for (int64_t k = 0; k < n; k++) v->s[k] = s, v->c[k] = 0, v->i[k] = i;
    v->bad = false;
}

/* n (<= IB) elements from src + off, as doubles or as int64. */
static void load_f(bf_dtype dt, const void *src, int64_t off, int64_t n, double *buf) {
    switch (dt) {
    case BF_DTYPE_F32: {
        const float *s = (const float *)src + off;
        for (int64_t k = 0; k < n; k++) buf[k] = s[k];
        break;
    }
    case BF_DTYPE_F64: memcpy(buf, (const double *)src + off, (size_t)n * sizeof(double)); break;
    case BF_DTYPE_F16: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t k = 0; k < n; k++) buf[k] = bf_f16_to_f32(s[k]);
        break;
    }
    default: {
        const uint16_t *s = (const uint16_t *)src + off;
        for (int64_t k = 0; k < n; k++) buf[k] = bf_bf16_to_f32(s[k]);
        break;
    }
    }
}

static void load_i(bf_dtype dt, const void *src, int64_t off, int64_t n, int64_t *buf) {
    if (dt == BF_DTYPE_I64) {
        memcpy(buf, (const int64_t *)src + off, (size_t)n * sizeof(int64_t));
    } else {
        const int32_t *s = (const int32_t *)src + off;
        for (int64_t k = 0; k < n; k++) buf[k] = s[k];
    }
}

/* Neumaier's step: s + c carries the sum with the low bits lost by s kept in c. */
static inline void kb_add(double *s, double *c, double v) {
    double t = *s + v;
    *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
    *s = t;
}

/* Fold n values (as doubles in fb, or int64 in ib) into element-wise accumulators. */
static void fold_f(bf_reduce_kind kind, double *s, double *c, size_t step, const double *v,
                   int64_t n) {
    /* step 0: all into s[0], c[0] (a scalar accumulator); 1: element-wise */
    switch (kind) {
    case BF_REDUCE_SUM:
    case BF_REDUCE_MEAN:
        if (step) {
            for (int64_t k = 0; k < n; k++) {
                double t = s[k] + v[k];
                c[k] += fabs(s[k]) >= fabs(v[k]) ? (s[k] - t) + v[k] : (v[k] - t) + s[k];
                s[k] = t;
            }
        } else {
            for (int64_t k = 0; k < n; k++) kb_add(s, c, v[k]);
        }
        break;
    case BF_REDUCE_PROD:
        for (int64_t k = 0; k < n; k++) s[k * step] *= v[k];
        break;
    case BF_REDUCE_MAX:
        for (int64_t k = 0; k < n; k++)
            if (v[k] > s[k * step] || isnan(v[k]))
                s[k * step] = isnan(s[k * step]) ? s[k * step] : v[k];
        break;
    case BF_REDUCE_MIN:
        for (int64_t k = 0; k < n; k++)
            if (v[k] < s[k * step] || isnan(v[k]))
                s[k * step] = isnan(s[k * step]) ? s[k * step] : v[k];
        break;
    }
}

static bool fold_i(bf_reduce_kind kind, int64_t *acc_i, size_t step, const int64_t *v, int64_t n) {
    bool ok = true;
    for (int64_t k = 0; k < n; k++) {
        int64_t *a = &acc_i[k * step];
        switch (kind) {
        case BF_REDUCE_SUM:
        case BF_REDUCE_MEAN: ok &= !__builtin_add_overflow(*a, v[k], a); break;
        case BF_REDUCE_PROD: ok &= !__builtin_mul_overflow(*a, v[k], a); break;
        case BF_REDUCE_MAX: *a = v[k] > *a ? v[k] : *a; break;
        case BF_REDUCE_MIN: *a = v[k] < *a ? v[k] : *a; break;
        }
    }
    return ok;
}

/* Accumulate n contiguous elements at src + off into a. */
/* Sum and Mean of float32 and the half types: plain double accumulation (its error, n * 2^-53
 * of the sum of magnitudes, is far below their own rounding); float64 is compensated. */
static bool plain_sum(const red_plan *p) {
    return (p->kind == BF_REDUCE_SUM || p->kind == BF_REDUCE_MEAN) && !p->is_int &&
           p->dt != BF_DTYPE_F64;
}

static void acc_run(const red_plan *p, acc *a, const void *src, int64_t off, int64_t n) {
    if (plain_sum(p) && p->dt == BF_DTYPE_F32) {
        /* eight independent partial sums, combined in a fixed order */
        const float *x = (const float *)src + off;
        double t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t k = 0;
        for (; k + 8 <= n; k += 8)
            for (int q = 0; q < 8; q++) t[q] += (double)x[k + q];
        for (; k < n; k++) t[0] += (double)x[k];
        a->s += ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
        return;
    }
    double fb[IB];
    int64_t ib[IB];
    for (int64_t k0 = 0; k0 < n; k0 += IB) {
        int64_t m = BF_MIN(IB, n - k0);
        if (p->is_int) {
            load_i(p->dt, src, off + k0, m, ib);
            a->bad |= !fold_i(p->kind, &a->i, 0, ib, m);
        } else if (plain_sum(p)) {
            load_f(p->dt, src, off + k0, m, fb);
            for (int64_t k = 0; k < m; k++) a->s += fb[k];
        } else {
            load_f(p->dt, src, off + k0, m, fb);
            fold_f(p->kind, &a->s, &a->c, 0, fb, m);
        }
    }
}

/* The same with n (<= IB) elements accumulated element-wise into v. */
static void vacc_run(const red_plan *p, vacc *v, const void *src, int64_t off, int64_t n) {
    if (p->is_int) {
        int64_t ib[IB];
        load_i(p->dt, src, off, n, ib);
        v->bad |= !fold_i(p->kind, v->i, 1, ib, n);
    } else if (plain_sum(p) && p->dt == BF_DTYPE_F32) {
        const float *x = (const float *)src + off;
        for (int64_t k = 0; k < n; k++) v->s[k] += (double)x[k];
    } else {
        double fb[IB];
        load_f(p->dt, src, off, n, fb);
        if (plain_sum(p))
            for (int64_t k = 0; k < n; k++) v->s[k] += fb[k];
        else
            fold_f(p->kind, v->s, v->c, 1, fb, n);
    }
}

/* into = into (+) from: the chunk results combined in chunk order. */
static void merge1(const red_plan *p, double *s, double *c, int64_t *i, bool *bad, double fs,
                   double fc, int64_t fi, bool fbad) {
    *bad |= fbad;
    if (p->is_int) {
        if (p->kind == BF_REDUCE_SUM || p->kind == BF_REDUCE_MEAN)
            *bad |= __builtin_add_overflow(*i, fi, i);
        else if (p->kind == BF_REDUCE_PROD)
            *bad |= __builtin_mul_overflow(*i, fi, i);
        else if (p->kind == BF_REDUCE_MAX)
            *i = fi > *i ? fi : *i;
        else
            *i = fi < *i ? fi : *i;
        return;
    }
    switch (p->kind) {
    case BF_REDUCE_SUM:
    case BF_REDUCE_MEAN:
        kb_add(s, c, fs);
        *c += fc;
        break;
    case BF_REDUCE_PROD: *s *= fs; break;
    default: fold_f(p->kind, s, c, 0, &fs, 1); break;
    }
}

static void acc_merge(const red_plan *p, acc *into, const acc *from) {
    merge1(p, &into->s, &into->c, &into->i, &into->bad, from->s, from->c, from->i, from->bad);
}

static void vacc_merge(const red_plan *p, vacc *into, const vacc *from, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        merge1(p, &into->s[k], &into->c[k], &into->i[k], &into->bad, from->s[k], from->c[k],
               from->i[k], from->bad);
}

/* Store the finished accumulator (s, c, i) as element idx of dst; false: it overflowed. */
static bool store1(const red_plan *p, void *dst, int64_t idx, double s, double c, int64_t i,
                   bool bad) {
    if (p->is_int) {
        if (p->kind == BF_REDUCE_MEAN) i /= p->R; /* truncates, as TF's integer Mean */
        if (bad || i < int_lowest(p->dt) || i > int_highest(p->dt)) return false;
        if (p->dt == BF_DTYPE_I32)
            ((int32_t *)dst)[idx] = (int32_t)i;
        else
            ((int64_t *)dst)[idx] = i;
        return true;
    }
    double v = s;
    if (p->kind == BF_REDUCE_SUM)
        v = s + c;
    else if (p->kind == BF_REDUCE_MEAN)
        v = (s + c) / (double)p->R;
    switch (p->dt) {
    case BF_DTYPE_F32: ((float *)dst)[idx] = (float)v; break;
    case BF_DTYPE_F64: ((double *)dst)[idx] = v; break;
    case BF_DTYPE_F16: ((uint16_t *)dst)[idx] = bf_f32_to_f16((float)v); break;
    default: ((uint16_t *)dst)[idx] = bf_f32_to_bf16((float)v); break;
    }
    return true;
}

/* ---- the engine: tasks ------------------------------------------------------------------- */

typedef struct red_job {
    const red_plan *p;
    const void *src;
    void *dst;
    void *ws;
    atomic_int overflow;
} red_job;

/* Mode A, chunk c of output o: the reduced elements [c * per_chunk, ...) of it. */
static void a_chunk(const red_plan *p, const void *src, int64_t o, int64_t c, acc *a) {
    acc_init(p, a);
    int64_t base = run_offset(p, o, false, -1), last = p->nr - 1;
    int64_t r = c * p->per_chunk, r1 = BF_MIN(p->R, r + p->per_chunk);
    while (r < r1) {
        int64_t seg = r / p->L, pos = r % p->L, n = BF_MIN(p->L - pos, r1 - r);
        acc_run(p, a, src, base + run_offset(p, seg, true, (int)last) + pos, n);
        r += n;
    }
}

/* Mode B, chunk c of unit u (output row g, inner block b): rows [c * per_chunk, ...), their
 * offsets stepped like an odometer over the reduced runs (no division per row). */
static void b_chunk(const red_plan *p, const void *src, int64_t u, int64_t c, vacc *v, int64_t *i0,
                    int64_t *n) {
    int64_t g = u / p->NI, b = u % p->NI, last = p->nr - 1;
    *i0 = b * IB, *n = BF_MIN(IB, p->L - *i0);
    vacc_init(p, v, *n);
    int64_t base = run_offset(p, g, false, (int)last) + *i0;
    int64_t r0 = c * p->per_chunk, r1 = BF_MIN(p->R, r0 + p->per_chunk);
    int64_t size[BF_MAX_RANK], stride[BF_MAX_RANK], idx[BF_MAX_RANK], off = 0;
    int nd = 0;
    for (int r = 0; r < p->nr; r++)
        if (p->red[r]) size[nd] = p->d[r], stride[nd] = p->st[r], nd++;
    int64_t t = r0; /* the odometer at row r0 */
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = t % size[k];
        t /= size[k];
        off += idx[k] * stride[k];
    }
    for (int64_t r = r0; r < r1; r++) {
        vacc_run(p, v, src, base + off, *n);
        for (int k = nd - 1; k >= 0; k--) { /* next row */
            off += stride[k];
            if (++idx[k] < size[k]) break;
            off -= size[k] * stride[k];
            idx[k] = 0;
        }
    }
}

static void finish_a(red_job *j, int64_t o, const acc *a) {
    if (!store1(j->p, j->dst, o, a->s, a->c, a->i, a->bad)) atomic_store(&j->overflow, 1);
}

static void finish_b(red_job *j, int64_t u, int64_t i0, int64_t n, const vacc *v) {
    int64_t g = u / j->p->NI;
    for (int64_t k = 0; k < n; k++)
        if (!store1(j->p, j->dst, g * j->p->L + i0 + k, v->s[k], v->c[k], v->i[k], v->bad))
            atomic_store(&j->overflow, 1);
}

/* One unit whole: every chunk in order. */
static void unit_task(void *arg, int64_t u, int slot) {
    (void)slot;
    red_job *j = arg;
    const red_plan *p = j->p;
    if (p->inner_red) {
        acc tot, a;
        for (int64_t c = 0; c < p->C; c++) {
            a_chunk(p, j->src, u, c, c ? &a : &tot);
            if (c) acc_merge(p, &tot, &a);
        }
        finish_a(j, u, &tot);
    } else {
        vacc tot, v;
        int64_t i0 = 0, n = 0;
        for (int64_t c = 0; c < p->C; c++) {
            b_chunk(p, j->src, u, c, c ? &v : &tot, &i0, &n);
            if (c) vacc_merge(p, &tot, &v, n);
        }
        finish_b(j, u, i0, n, &tot);
    }
}

/* One chunk of one unit, into the workspace. */
static void chunk_task(void *arg, int64_t t, int slot) {
    (void)slot;
    red_job *j = arg;
    const red_plan *p = j->p;
    int64_t u = t / p->C, c = t % p->C, i0, n;
    if (p->inner_red)
        a_chunk(p, j->src, u, c, (acc *)j->ws + t);
    else
        b_chunk(p, j->src, u, c, (vacc *)j->ws + t, &i0, &n);
}

/* The chunks of one unit, combined in order. */
static void combine_task(void *arg, int64_t u, int slot) {
    (void)slot;
    red_job *j = arg;
    const red_plan *p = j->p;
    if (p->inner_red) {
        acc *a = (acc *)j->ws + u * p->C;
        for (int64_t c = 1; c < p->C; c++) acc_merge(p, &a[0], &a[c]);
        finish_a(j, u, &a[0]);
    } else {
        vacc *v = (vacc *)j->ws + u * p->C;
        int64_t i0 = (u % p->NI) * IB, n = BF_MIN(IB, p->L - i0);
        for (int64_t c = 1; c < p->C; c++) vacc_merge(p, &v[0], &v[c], n);
        finish_b(j, u, i0, n, &v[0]);
    }
}

size_t bf_reduce_engine_ws(bf_reduce_kind kind, bf_dtype dt, int rank, const int64_t *dims,
                           const bool *mask, int n_threads) {
    red_plan p;
    make_plan(kind, dt, rank, dims, mask, n_threads, &p);
    return p.ws;
}

bf_status bf_reduce_engine(bf_reduce_kind kind, bf_dtype dt, const void *src, void *dst, int rank,
                           const int64_t *dims, const bool *mask, const bf_exec *ex, void *ws,
                           size_t ws_size, bf_error *err) {
    red_plan p;
    make_plan(kind, dt, rank, dims, mask, ex ? ex->n_threads : 1, &p);
    size_t es = bf_dtype_size(dt);
    if (p.O == 0) return BF_OK;
    if (p.R == 1) { /* nothing reduced: a copy (Mean divides by 1) */
        memcpy(dst, src, (size_t)p.O * es);
        return BF_OK;
    }
    if (p.R == 0) { /* TF's identities */
        if (p.is_int && kind == BF_REDUCE_MEAN)
            return bf_err(err, BF_ESHAPE, "bad_shape",
                          "Mean over an empty axis of an integer tensor divides by zero");
        acc a;
        acc_init(&p, &a);
        for (int64_t o = 0; o < p.O; o++) store1(&p, dst, o, a.s, a.c, a.i, false);
        return BF_OK;
    }
    red_job j = {.p = &p, .src = src, .dst = dst, .ws = ws};
    atomic_init(&j.overflow, 0);
    if (p.split && ws && ws_size >= p.ws) {
        bf_parallel_for(ex, p.units * p.C, chunk_task, &j);
        bf_parallel_for(ex, p.units, combine_task, &j);
    } else {
        bf_parallel_for(ex, p.units, unit_task, &j);
    }
    if (atomic_load(&j.overflow))
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "the %s overflows %s",
                      kind == BF_REDUCE_PROD ? "product" : "sum", bf_dtype_name(dt));
    return BF_OK;
}

/* ---- the blocks ---------------------------------------------------------------------- */

static const bf_tensor *axes_of(const bf_tensor *const *in) { return in[1]; }

size_t bf_reduce_workspace_cpu(const bf_node *node, const bf_port_info *in, const bf_port_info *out,
                               const bf_exec *ex) {
    (void)out;
    const bf_reduce_impl *impl = node->desc->impl;
    bool mask[BF_MAX_RANK];
    bf_error e = {0};
    const bf_tensor *axes = in[1].rank == BF_PORT_ABSENT_RANK ? NULL : in[1].value;
    if (axes_mask(axes, in[0].rank, mask, &e)) return 0;
    return bf_reduce_engine_ws(impl->kind, in[0].dtype, in[0].rank, in[0].dims, mask,
                               ex->n_threads);
}

bf_status bf_reduce_run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                            const bf_exec *ex, bf_error *err) {
    const bf_reduce_impl *impl = node->desc->impl;
    const bf_tensor *x = in[0];
    bool mask[BF_MAX_RANK];
    bf_status st = axes_mask(axes_of(in), x->rank, mask, err);
    if (st) return st;
    st = bf_reduce_engine(impl->kind, x->dtype, x->data, out[0]->data, x->rank, x->dims, mask, ex,
                          ex->workspace, ex->workspace_size, err);
    if (st) bf_err_at(err, "output", NULL);
    return st;
}

/* ---- gradients ------------------------------------------------------------------------ */

/*
 * The shape of the input with the reduced axes set to 1 (math_ops.reduced_shape), as the
 * Const the gradient reshapes dy to; NULL (and an error) when it is not known.
 */
static const char *kept_shape(bf_grad_ctx *g, const bool *mask, const bf_port_info *x,
                              bf_error *err) {
    int64_t v[BF_MAX_RANK];
    int unknown = 0;
    for (int k = 0; k < x->rank; k++) {
        v[k] = mask[k] ? 1 : x->dims[k];
        if (v[k] < 0) unknown++;
    }
    if (unknown > 1) {
        bf_arr_err(err, BF_ESHAPE, "shape_unknown", "input", NULL,
                   "the gradient of %s needs the input's shape before running, but it is %s",
                   bf_grad_node(g)->desc->type, bf_tf_shape_of(x, (char[96]){0}, 96));
        return NULL;
    }
    return bf_grad_const_i32(g, "kept_shape", x->rank, v);
}

/* The input's shape: a Const when known, else a Shape block of the input. */
static const char *input_shape(bf_grad_ctx *g, const bf_port_info *x) {
    if (bf_port_known(x)) return bf_grad_const_i32(g, "input_shape", x->rank, x->dims);
    return bf_grad_add(g, "input_shape", "Shape", NULL, "input", bf_grad_input(g, 0), NULL);
}

bf_status bf_reduce_gradient(bf_grad_ctx *g, bf_error *err) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const bf_node *node = bf_grad_node(g);
    const bf_reduce_impl *impl = node->desc->impl;
    const bf_port_info *x = bf_grad_input_info(g, 0), *ax = bf_grad_input_info(g, 1);
    bool absent = !ax || ax->rank == BF_PORT_ABSENT_RANK, keep = node->attrs[0].b;
    if (!bf_dtype_is_float(x->dtype)) return BF_OK; /* integers have no gradient */
    if (x->rank < 0 || (!absent && !ax->value))
        return bf_arr_err(err, BF_ESHAPE, "shape_unknown", "reduction_indices", NULL,
                          "the gradient of %s needs the input's rank and the reduction "
                          "indices before running (a Const)",
                          node->desc->type);
    bool mask[BF_MAX_RANK];
    bf_status st = axes_mask(absent ? NULL : ax->value, x->rank, mask, err);
    if (st) return st;
    const char *kept = kept_shape(g, mask, x, err);
    if (!kept) return err->status ? err->status : BF_EINVAL;
    const char *shape = input_shape(g, x);
    if (!shape) return BF_OK;
    if (impl->kind == BF_REDUCE_SUM || impl->kind == BF_REDUCE_MEAN) {
        /* _SumGrad: BroadcastTo(Reshape(dy, reduced_shape), shape(input)) */
        const char *dyk =
            keep ? dy
                 : bf_grad_add(g, "dy_kept", "Reshape", NULL, "tensor", dy, "shape", kept, NULL);
        const char *dx =
            dyk ? bf_grad_add(g, "dx", "BroadcastTo", NULL, "input", dyk, "shape", shape, NULL)
                : NULL;
        if (dx && impl->kind == BF_REDUCE_MEAN) {
            /* _MeanGrad: divided by the count of reduced elements per output */
            double count = 1;
            for (int k = 0; k < x->rank; k++)
                if (mask[k]) {
                    if (x->dims[k] < 0)
                        return bf_arr_err(err, BF_ESHAPE, "shape_unknown", "input", NULL,
                                          "the gradient of Mean needs the reduced dims before "
                                          "running");
                    count *= (double)x->dims[k];
                }
            if (bf_registry_find("RealDiv")) {
                const char *f = bf_grad_const_scalar(g, "count", x->dtype, count);
                dx = f ? bf_grad_add(g, "dx_mean", "RealDiv", NULL, "x", dx, "y", f, NULL) : NULL;
            } else { /* before the math blocks: the same through Mul by 1/count */
                const char *f = bf_grad_const_scalar(g, "inv_count", x->dtype, 1.0 / count);
                dx = f ? bf_grad_add(g, "dx_mean", "Mul", NULL, "x", dx, "y", f, NULL) : NULL;
            }
        }
        if (dx) bf_grad_set(g, 0, dx);
        return BF_OK;
    }
    if (impl->kind == BF_REDUCE_PROD) return BF_OK; /* not differentiated here */
    /* _MinOrMaxGrad: indicators = Cast(Equal(y, x)); dx = indicators / Sum(indicators) * dy */
    const char *need[] = {"Equal", "RealDiv", "Cast"};
    for (int k = 0; k < 3; k++)
        if (!bf_registry_find(need[k]))
            return bf_arr_err(err, BF_EUNSUPPORTED, "unsupported", "input", NULL,
                              "the gradient of %s needs the %s block", node->desc->type, need[k]);
    const char *y = bf_grad_output(g, 0);
    const char *yk =
        keep ? y : bf_grad_add(g, "y_kept", "Reshape", NULL, "tensor", y, "shape", kept, NULL);
    const char *dyk =
        keep ? dy : bf_grad_add(g, "dy_kept", "Reshape", NULL, "tensor", dy, "shape", kept, NULL);
    if (!yk || !dyk) return BF_OK;
    const char *eq =
        bf_grad_add(g, "equal", "Equal", NULL, "x", yk, "y", bf_grad_input(g, 0), NULL);
    char cast_attrs[64];
    snprintf(cast_attrs, sizeof(cast_attrs), "{\"DstT\":\"%s\"}", bf_dtype_name(x->dtype));
    const char *ind = eq ? bf_grad_add(g, "indicators", "Cast", cast_attrs, "x", eq, NULL) : NULL;
    const char *axes = absent ? NULL : bf_grad_input(g, 1);
    const char *num = NULL;
    if (ind)
        num = axes ? bf_grad_add(g, "num_selected", "Sum", "{\"keep_dims\":true}", "input", ind,
                                 "reduction_indices", axes, NULL)
                   : bf_grad_add(g, "num_selected", "Sum", "{\"keep_dims\":true}", "input", ind,
                                 NULL);
    const char *share =
        num ? bf_grad_add(g, "share", "RealDiv", NULL, "x", ind, "y", num, NULL) : NULL;
    const char *dx = share ? bf_grad_add(g, "dx", "Mul", NULL, "x", share, "y", dyk, NULL) : NULL;
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}
