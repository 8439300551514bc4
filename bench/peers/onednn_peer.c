/*
 * onednn_peer.c - the oneDNN comparator for `blockflow bench` (benchmark only; never linked
 * into the library). Built as blockflow-onednn-peer by bench/CMakeLists.txt when libdnnl is
 * installed (Debian libdnnl-dev, oneDNN 2.x C API).
 *
 * Speaks the text protocol described in bench/bench.c: prints "ready oneDNN <version>", then
 * answers each "conv ..." line with "ok <count> <ms>... mode <name>" or "err <message>". The
 * tensors it is given are NHWC activations and HWIO filters (user memory described by
 * strides), and every reorder between them and oneDNN's layouts is inside the timed call, so
 * the figure is what a user holding TF tensors would pay. oneDNN is compared in its best
 * configuration for that user, one of three modes:
 *   plain  every tensor in the user's NHWC/HWIO layout (no reorder at all);
 *   wany   activations NHWC, weights (or diff_weights) format_tag any: the filter's reorder in,
 *          or diff_weights' reorder out, is counted;
 *   any    every tensor format_tag any, with the reorders of all of them.
 * On the first request for a new (op, geometry, dtype) the peer builds all three (a mode
 * oneDNN cannot build is left out), warms each up and probes them back-to-back for about
 * max(0.1 s, the request's seconds) each; the mode with the lowest median is kept, the others
 * freed, and this and later requests for the same key are timed with it alone. oneDNN has no
 * f64 convolution: f64 requests get an err answer. Threads: OMP_NUM_THREADS (set by the bench
 * to its --threads).
 */
#include <oneapi/dnnl/dnnl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MODE_PLAIN, MODE_WANY, MODE_ANY, NMODES };
static const char *const mode_name[NMODES] = {"plain", "wany", "any"};

#define KEYN 21      /* op, 18 geometry numbers, groups, dtype (0 f32, 1 f64) */
#define MAXCALLS 512 /* timed calls per answer, and per mode in a probe */

/* One mode's primitives over the user's tensors (slots 0, 1 inputs, 2 output). */
typedef struct setup {
    int ok;
    dnnl_primitive_t conv, reorder[3];
    dnnl_memory_t user[3], prim[3]; /* prim[i] NULL: the primitive uses user[i] directly */
} setup;

/* The tensors of the last request and the modes built over them. */
typedef struct state {
    long long key[KEYN];
    int valid, mode; /* mode: the one the probe chose */
    void *buf[3];    /* the user's NHWC / HWIO data, shared by every mode */
    setup m[NMODES];
} state;

/* The memory descriptors of one request: user (u) and any (a), and the convolution's shape. */
typedef struct descs {
    dnnl_memory_desc_t xu, yu, wu, xa, ya, wa;
    dnnl_dims_t strides, dil, pl, pr;
} descs;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* What one call is timed with: wall time, or process CPU time when $BF_BENCH_CLOCK is "cpu"
   (`blockflow bench --clock cpu`, for a shared machine: descheduled time left out). */
static double call_ms(void) {
    static int cpu = -1;
    if (cpu < 0) cpu = getenv("BF_BENCH_CLOCK") && !strcmp(getenv("BF_BENCH_CLOCK"), "cpu");
    if (!cpu) return now_ms();
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void release_setup(setup *s) {
    if (s->conv) dnnl_primitive_destroy(s->conv);
    for (int i = 0; i < 3; i++) {
        if (s->reorder[i]) dnnl_primitive_destroy(s->reorder[i]);
        if (s->prim[i]) dnnl_memory_destroy(s->prim[i]);
        if (s->user[i]) dnnl_memory_destroy(s->user[i]);
    }
    memset(s, 0, sizeof *s);
}

static void release(state *st) {
    for (int m = 0; m < NMODES; m++) release_setup(&st->m[m]);
    for (int i = 0; i < 3; i++) free(st->buf[i]);
    memset(st, 0, sizeof *st);
}

#define CHK(x)                                                                                 \
    do {                                                                                       \
        dnnl_status_t st_ = (x);                                                               \
        if (st_ != dnnl_success) {                                                             \
            snprintf(err, esz, "%.80s failed (%d)", #x, (int)st_);                             \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* The descriptors of request k: NHWC activations, HWIO (or grouped HWIO) weights. */
static int make_descs(descs *d, const long long *k, char *err, size_t esz) {
    long long n = k[1], h = k[2], w = k[3], c = k[4], kh = k[5], kw = k[6], cg = k[7], o = k[8];
    long long oh = k[9], ow = k[10], g = k[19];
    dnnl_dims_t xd = {n, c, h, w}, xs = {h * w * c, 1, w * c, c};
    dnnl_dims_t yd = {n, o, oh, ow}, ys = {oh * ow * o, 1, ow * o, o};
    dnnl_dims_t wd, wsd;
    int wn;
    if (g == 1) {
        wn = 4;
        long long a[4] = {o, cg, kh, kw}, b[4] = {1, o, kw * cg * o, cg * o};
        memcpy(wd, a, sizeof a), memcpy(wsd, b, sizeof b);
    } else {
        wn = 5; /* (g, o/g, i/g, kh, kw) over the HWIO [kh, kw, i/g, o] data */
        long long a[5] = {g, o / g, cg, kh, kw}, b[5] = {o / g, 1, o, kw * cg * o, cg * o};
        memcpy(wd, a, sizeof a), memcpy(wsd, b, sizeof b);
    }
    CHK(dnnl_memory_desc_init_by_strides(&d->xu, 4, xd, dnnl_f32, xs));
    CHK(dnnl_memory_desc_init_by_strides(&d->yu, 4, yd, dnnl_f32, ys));
    CHK(dnnl_memory_desc_init_by_strides(&d->wu, wn, wd, dnnl_f32, wsd));
    CHK(dnnl_memory_desc_init_by_tag(&d->xa, 4, xd, dnnl_f32, dnnl_format_tag_any));
    CHK(dnnl_memory_desc_init_by_tag(&d->ya, 4, yd, dnnl_f32, dnnl_format_tag_any));
    CHK(dnnl_memory_desc_init_by_tag(&d->wa, wn, wd, dnnl_f32, dnnl_format_tag_any));
    d->strides[0] = k[11], d->strides[1] = k[12];
    d->dil[0] = k[13] - 1, d->dil[1] = k[14] - 1;
    d->pl[0] = k[15], d->pl[1] = k[17];
    d->pr[0] = k[16], d->pr[1] = k[18];
    return 0;
}

/* The user tensors of op: a, b, out as in conv_kernels.h. */
static const dnnl_memory_desc_t *user_md(const descs *d, int op, int i) {
    if (i == 0) return op == 2 ? &d->yu : &d->xu;
    if (i == 1) return op == 1 ? &d->yu : &d->wu;
    return op == 0 ? &d->yu : op == 1 ? &d->wu : &d->xu;
}

/* Allocate and fill the user tensors of request k. */
static int alloc_user(state *st, const descs *d, int op, char *err, size_t esz) {
    for (int i = 0; i < 3; i++) {
        size_t bytes = dnnl_memory_desc_get_size(user_md(d, op, i));
        st->buf[i] = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
        if (!st->buf[i]) {
            snprintf(err, esz, "out of memory");
            return -1;
        }
        float *f = st->buf[i];
        for (size_t e = 0; e < bytes / 4; e++) f[e] = (float)((e * 7919) % 1000) / 1000.0f - 0.45f;
    }
    return 0;
}

/* Make prim[i] in the layout `want`; reorder[i] converts user<->prim when they differ. */
static int bind(setup *s, int i, const dnnl_memory_desc_t *want, dnnl_engine_t eng, int is_out,
                char *err, size_t esz) {
    const dnnl_memory_desc_t *have;
    CHK(dnnl_memory_get_memory_desc(s->user[i], &have));
    if (dnnl_memory_desc_equal(have, want)) return 0;
    CHK(dnnl_memory_create(&s->prim[i], want, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    if (is_out) CHK(dnnl_reorder_primitive_desc_create(&rpd, want, eng, have, eng, NULL));
    else CHK(dnnl_reorder_primitive_desc_create(&rpd, have, eng, want, eng, NULL));
    dnnl_status_t rc = dnnl_primitive_create(&s->reorder[i], rpd);
    dnnl_primitive_desc_destroy(rpd);
    CHK(rc);
    return 0;
}

/* Build mode `mode` of request k over the tensors of st. On failure s holds what was made
 * (release_setup frees it) and err says why. */
static int build(setup *s, int mode, const state *st, const descs *d, int op,
                 dnnl_engine_t eng, char *err, size_t esz) {
    for (int i = 0; i < 3; i++)
        CHK(dnnl_memory_create(&s->user[i], user_md(d, op, i), eng, st->buf[i]));
    const dnnl_memory_desc_t *x = mode == MODE_ANY ? &d->xa : &d->xu;
    const dnnl_memory_desc_t *y = mode == MODE_ANY ? &d->ya : &d->yu;
    const dnnl_memory_desc_t *w = mode == MODE_PLAIN ? &d->wu : &d->wa;
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    CHK(dnnl_dilated_convolution_forward_desc_init(
        &fd, op == 0 ? dnnl_forward_inference : dnnl_forward_training, dnnl_convolution_direct,
        x, w, NULL, y, d->strides, d->dil, d->pl, d->pr));
    CHK(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
    dnnl_status_t rc = dnnl_success;
    if (op == 0) {
        pd = fpd, fpd = NULL;
    } else {
        if (op == 1)
            rc = dnnl_dilated_convolution_backward_weights_desc_init(
                &bd, dnnl_convolution_direct, x, w, NULL, y, d->strides, d->dil, d->pl, d->pr);
        else
            rc = dnnl_dilated_convolution_backward_data_desc_init(
                &bd, dnnl_convolution_direct, x, w, y, d->strides, d->dil, d->pl, d->pr);
        if (rc == dnnl_success) rc = dnnl_primitive_desc_create(&pd, &bd, NULL, eng, fpd);
        dnnl_primitive_desc_destroy(fpd);
        CHK(rc);
    }
    static const dnnl_query_t q[3][3] = {
        {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
        {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
        {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md}};
    int r = 0;
    for (int i = 0; i < 3 && !r; i++)
        r = bind(s, i, dnnl_primitive_desc_query_md(pd, q[op][i], 0), eng, i == 2, err, esz);
    if (!r) {
        rc = dnnl_primitive_create(&s->conv, pd);
        if (rc != dnnl_success) snprintf(err, esz, "dnnl_primitive_create failed (%d)", (int)rc);
    }
    dnnl_primitive_desc_destroy(pd);
    return r || rc != dnnl_success ? -1 : 0;
}

/* One user-visible call: reorders in, convolution, reorder out. */
static int call(setup *s, int op, dnnl_stream_t strm, char *err, size_t esz) {
    for (int i = 0; i < 2; i++)
        if (s->prim[i]) {
            dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, s->user[i]}, {DNNL_ARG_TO, s->prim[i]}};
            CHK(dnnl_primitive_execute(s->reorder[i], strm, 2, a));
        }
    static const int args[3][3] = {
        {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
        {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
        {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC}};
    dnnl_exec_arg_t a[3];
    for (int i = 0; i < 3; i++)
        a[i] = (dnnl_exec_arg_t){args[op][i], s->prim[i] ? s->prim[i] : s->user[i]};
    CHK(dnnl_primitive_execute(s->conv, strm, 3, a));
    if (s->prim[2]) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->prim[2]}, {DNNL_ARG_TO, s->user[2]}};
        CHK(dnnl_primitive_execute(s->reorder[2], strm, 2, r));
    }
    CHK(dnnl_stream_wait(strm));
    return 0;
}

/* Time one call of mode m; a failing mode is freed and left out. Returns the time, or -1. */
static double timed_call(setup *s, int op, dnnl_stream_t strm) {
    char e[256];
    double a = call_ms();
    if (call(s, op, strm, e, sizeof e)) {
        release_setup(s);
        return -1;
    }
    return call_ms() - a;
}

/*
 * Set st up for request k: the user tensors, every mode that builds and runs, then the probe
 * that keeps the fastest (st->mode) and frees the others. Returns 0, or -1 with err set when
 * no mode works.
 */
static int prepare(state *st, const long long *k, double secs, dnnl_engine_t eng,
                   dnnl_stream_t strm, char *err, size_t esz) {
    int op = (int)k[0], alive = 0;
    descs d;
    if (make_descs(&d, k, err, esz) || alloc_user(st, &d, op, err, esz)) return -1;
    char first_err[200] = "";
    for (int m = 0; m < NMODES; m++) {
        setup *s = &st->m[m];
        char e[160];
        if (build(s, m, st, &d, op, eng, e, sizeof e) || call(s, op, strm, e, sizeof e)) {
            if (!first_err[0]) snprintf(first_err, sizeof first_err, "%.8s: %.150s", mode_name[m], e);
            release_setup(s);
            continue;
        }
        s->ok = 1, alive++;
    }
    if (!alive) {
        snprintf(err, esz, "no mode builds (%.200s)", first_err);
        return -1;
    }
    /* a pilot call each; a mode five times slower than the fastest is out at once (a
     * reference kernel on a large case would otherwise make the probe take minutes) */
    double pilot[NMODES], best = -1;
    for (int m = 0; m < NMODES; m++) {
        pilot[m] = st->m[m].ok ? timed_call(&st->m[m], op, strm) : -1;
        if (pilot[m] >= 0 && (best < 0 || pilot[m] < best)) best = pilot[m];
    }
    for (int m = 0; m < NMODES; m++)
        if (st->m[m].ok && (pilot[m] < 0 || pilot[m] > 5 * best)) release_setup(&st->m[m]);
    /* the probe: the modes in turn, one call each, about `probe` seconds per mode */
    static double t[NMODES][MAXCALLS];
    int cnt[NMODES] = {0};
    double probe = (secs > 0.1 ? secs : 0.1) * 1e3, t0 = now_ms();
    for (int more = 1; more;) {
        more = 0, alive = 0;
        for (int m = 0; m < NMODES; m++) {
            if (!st->m[m].ok || cnt[m] >= MAXCALLS) continue;
            double ms = timed_call(&st->m[m], op, strm);
            if (ms < 0) continue;
            t[m][cnt[m]++] = ms, alive++;
            more = 1;
        }
        if (now_ms() - t0 >= probe * alive) more = 0;
    }
    int pick = -1;
    double pick_med = 0;
    for (int m = 0; m < NMODES; m++) {
        if (!st->m[m].ok || !cnt[m]) continue;
        double med = median(t[m], cnt[m]);
        if (pick < 0 || med < pick_med) pick = m, pick_med = med;
    }
    if (pick < 0) {
        snprintf(err, esz, "every mode failed while probed");
        return -1;
    }
    for (int m = 0; m < NMODES; m++)
        if (m != pick) release_setup(&st->m[m]);
    st->mode = pick;
    return 0;
}

int main(void) {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&strm, eng, dnnl_stream_default_flags) != dnnl_success) {
        printf("err cannot create a oneDNN CPU engine\n");
        return 1;
    }
    const dnnl_version_t *v = dnnl_version();
    printf("ready oneDNN %d.%d.%d\n", v->major, v->minor, v->patch);
    fflush(stdout);
    state st = {0};
    char line[1024], err[256];
    static double times[MAXCALLS];
    while (fgets(line, sizeof line, stdin)) {
        long long k[KEYN];
        double secs;
        char dtype[16] = "f32"; /* the old 21-field request is f32 */
        int got = sscanf(line, "conv %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "
                               "%lld %lld %lld %lld %lld %lld %lld %lld %lf %15s",
                         &k[0], &k[1], &k[2], &k[3], &k[4], &k[5], &k[6], &k[7], &k[8], &k[9],
                         &k[10], &k[11], &k[12], &k[13], &k[14], &k[15], &k[16], &k[17], &k[18],
                         &k[19], &secs, dtype);
        if (got < 21 || (strcmp(dtype, "f32") && strcmp(dtype, "f64")) || k[0] < 0 ||
            k[0] > 2 || k[19] < 1) {
            printf("err bad request\n");
            fflush(stdout);
            continue;
        }
        k[20] = !strcmp(dtype, "f64");
        if (k[20]) {
            release(&st); /* the run is f64: nothing left for f32 tensors to do */
            printf("err oneDNN has no f64 convolution\n");
            fflush(stdout);
            continue;
        }
        err[0] = 0;
        int rc = 0, op = (int)k[0];
        if (!st.valid || memcmp(st.key, k, sizeof k)) {
            release(&st);
            rc = prepare(&st, k, secs, eng, strm, err, sizeof err);
            if (!rc) st.valid = 1, memcpy(st.key, k, sizeof k);
        }
        int cnt = 0;
        double t0 = now_ms();
        while (!rc && cnt < MAXCALLS) {
            double a = call_ms();
            rc = call(&st.m[st.mode], op, strm, err, sizeof err);
            times[cnt++] = call_ms() - a;
            if (now_ms() - t0 >= secs * 1e3) break;
        }
        if (rc) {
            release(&st);
            printf("err %s\n", err);
        } else {
            printf("ok %d", cnt);
            for (int i = 0; i < cnt; i++) printf(" %.6f", times[i]);
            printf(" mode %s\n", mode_name[st.mode]);
        }
        fflush(stdout);
    }
    release(&st);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return 0;
}
