/*
 * loss_kernels_impl.h - the row kernels of loss_common.h for one float type, included by
 * loss_kernels.c with LK_T (float, double), LK_S (f32, f64), LK_EXP and LK_LOG (expf/exp,
 * logf/log). Sums over a row are accumulated in double and rounded once to LK_T (TF sums in
 * LK_T with Eigen's tree reduction: the results agree to the last bits, not bit for bit).
 * Everything else is TF's sequence of LK_T operations: shift by the row max, exp, divide by
 * (or multiply by the inverse of) the rounded sum, log of the rounded sum.
 */
#define LK_CAT2(a, b) a##_##b
#define LK_CAT(a, b)  LK_CAT2(a, b)
#define LK_FN(name)   LK_CAT(name, LK_S)

/* The max of a row (TF: Eigen's maximum(), from the first element; NaN is not taken). */
static inline LK_T LK_FN(lk_row_max)(const LK_T *x, int64_t n, int64_t cs) {
    LK_T m = x[0];
    for (int64_t j = 1; j < n; j++) m = x[j * cs] > m ? x[j * cs] : m;
    return m;
}

typedef struct LK_FN(lk_job) {
    const bf_rows *r;
    const LK_T *f, *l;
    const int32_t *l32;
    const int64_t *l64;
    LK_T *y, *loss;
    int log;
    int64_t tasks;
} LK_FN(lk_job);

static void LK_FN(lk_softmax_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const LK_FN(lk_job) *j = arg;
    const int64_t C = j->r->cols;
    int64_t r0, r1;
    lk_range(j->r->rows, j->tasks, t, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const LK_T *x = j->f + r * C;
        LK_T *y = j->y + r * C;
        const LK_T m = LK_FN(lk_row_max)(x, C, 1);
        double s = 0;
        if (j->log) {
            /* TF: y = (x - max) - log(sum(exp(x - max))) */
            for (int64_t c = 0; c < C; c++) {
                y[c] = x[c] - m;
                s += (double)LK_EXP(y[c]);
            }
            const LK_T ls = LK_LOG((LK_T)s);
            for (int64_t c = 0; c < C; c++) y[c] = y[c] - ls;
        } else {
            /* TF: y = exp(x - max) * (1 / sum(exp(x - max))) */
            for (int64_t c = 0; c < C; c++) {
                y[c] = LK_EXP(x[c] - m);
                s += (double)y[c];
            }
            const LK_T inv = (LK_T)1 / (LK_T)s;
            for (int64_t c = 0; c < C; c++) y[c] = y[c] * inv;
        }
    }
}

void LK_FN(bf_softmax_rows)(const bf_rows *r, const LK_T *x, LK_T *y, int log,
                            const bf_exec *ex) {
    LK_FN(lk_job) j = {.r = r, .f = x, .y = y, .log = log};
    j.tasks = lk_tasks(ex, r->rows, r->cols * 8);
    lk_run(ex, j.tasks, LK_FN(lk_softmax_task), &j);
}

static void LK_FN(lk_xent_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const LK_FN(lk_job) *j = arg;
    const bf_rows *R = j->r;
    const int64_t C = R->cols;
    int64_t r0, r1;
    lk_range(R->rows, j->tasks, t, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const LK_T *f = j->f + r * R->f_rs, *l = j->l + r * R->l_rs;
        LK_T *bp = j->y + r * C;
        if (C == 0) {
            j->loss[r] = 0; /* an empty sum */
            continue;
        }
        const LK_T m = LK_FN(lk_row_max)(f, C, R->f_cs);
        double s = 0;
        for (int64_t c = 0; c < C; c++) { /* exp(f - max), kept for the backprop */
            bp[c] = LK_EXP(f[c * R->f_cs] - m);
            s += (double)bp[c];
        }
        const LK_T sum = (LK_T)s, ls = LK_LOG(sum);
        double loss = 0;
        for (int64_t c = 0; c < C; c++) {
            const LK_T lab = l[c * R->l_cs];
            loss += (double)(lab * (ls - (f[c * R->f_cs] - m))); /* 0 * inf is NaN, as in TF */
            bp[c] = bp[c] / sum - lab;
        }
        j->loss[r] = (LK_T)loss;
    }
}

void LK_FN(bf_xent_rows)(const bf_rows *r, const LK_T *f, const LK_T *l, LK_T *loss,
                         LK_T *backprop, const bf_exec *ex) {
    LK_FN(lk_job) j = {.r = r, .f = f, .l = l, .y = backprop, .loss = loss};
    j.tasks = lk_tasks(ex, r->rows, r->cols * 12);
    lk_run(ex, j.tasks, LK_FN(lk_xent_task), &j);
}

static void LK_FN(lk_sparse_task)(void *arg, int64_t t, int slot) {
    (void)slot;
    const LK_FN(lk_job) *j = arg;
    const int64_t C = j->r->cols;
    int64_t r0, r1;
    lk_range(j->r->rows, j->tasks, t, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const LK_T *f = j->f + r * C;
        LK_T *bp = j->y + r * C;
        const int64_t lab = j->l32 ? (int64_t)j->l32[r] : j->l64[r];
        const LK_T m = LK_FN(lk_row_max)(f, C, 1);
        double s = 0;
        for (int64_t c = 0; c < C; c++) {
            bp[c] = LK_EXP(f[c] - m);
            s += (double)bp[c];
        }
        const LK_T sum = (LK_T)s;
        j->loss[r] = LK_LOG(sum) - (f[lab] - m);
        for (int64_t c = 0; c < C; c++) bp[c] = bp[c] / sum - (c == lab ? 1 : 0);
    }
}

void LK_FN(bf_sparse_xent_rows)(const bf_rows *r, const LK_T *f, const int32_t *l32,
                                const int64_t *l64, LK_T *loss, LK_T *backprop,
                                const bf_exec *ex) {
    LK_FN(lk_job) j = {.r = r, .f = f, .l32 = l32, .l64 = l64, .y = backprop, .loss = loss};
    j.tasks = lk_tasks(ex, r->rows, r->cols * 10);
    lk_run(ex, j.tasks, LK_FN(lk_sparse_task), &j);
}

#undef LK_FN
#undef LK_CAT
#undef LK_CAT2
