/*
 * onednn_peer.c - the oneDNN comparator for `blockflow bench` (benchmark only; never linked
 * into the library). Built as blockflow-onednn-peer by bench/CMakeLists.txt when libdnnl is
 * installed (Debian libdnnl-dev, oneDNN 2.x C API).
 *
 * Speaks the text protocol described in bench/bench.c: prints "ready oneDNN <version>", then
 * answers each "conv ..." line with "ok <count> <ms>..." or "err <message>". The tensors it is
 * given are NHWC activations and HWIO filters (user memory described by strides); oneDNN picks
 * its preferred layouts (format_tag any) and every reorder between the two is inside the timed
 * call, so the figure is what a user holding TF tensors would pay. Threads: OMP_NUM_THREADS
 * (set by the bench to its --threads).
 */
#include <oneapi/dnnl/dnnl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 4 /* reorders: up to 2 in, 1 out */

typedef struct setup {
    long long key[21];
    int valid;
    dnnl_primitive_t conv, reorder[MAXR];
    dnnl_memory_t user[3], prim[3]; /* 0, 1 inputs, 2 output */
    int in_reorder[2], out_reorder;
    void *buf[3];
} setup;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void release(setup *s) {
    if (s->conv) dnnl_primitive_destroy(s->conv);
    for (int i = 0; i < MAXR; i++)
        if (s->reorder[i]) dnnl_primitive_destroy(s->reorder[i]);
    for (int i = 0; i < 3; i++) {
        if (s->prim[i]) dnnl_memory_destroy(s->prim[i]);
        if (s->user[i]) dnnl_memory_destroy(s->user[i]);
        free(s->buf[i]);
    }
    memset(s, 0, sizeof *s);
}

#define CHK(x)                                                                                 \
    do {                                                                                       \
        dnnl_status_t st_ = (x);                                                               \
        if (st_ != dnnl_success) {                                                             \
            snprintf(err, esz, "%s failed (%d)", #x, (int)st_);                                \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* Make prim[i] in the layout `want`; reorder[i] converts user<->prim when they differ. */
static int bind(setup *s, int i, const dnnl_memory_desc_t *want, dnnl_engine_t eng, int is_out,
                char *err, size_t esz) {
    const dnnl_memory_desc_t *have;
    CHK(dnnl_memory_get_memory_desc(s->user[i], &have));
    if (dnnl_memory_desc_equal(have, want)) {
        s->prim[i] = NULL;
        return 0;
    }
    CHK(dnnl_memory_create(&s->prim[i], want, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    if (is_out) CHK(dnnl_reorder_primitive_desc_create(&rpd, want, eng, have, eng, NULL));
    else CHK(dnnl_reorder_primitive_desc_create(&rpd, have, eng, want, eng, NULL));
    CHK(dnnl_primitive_create(&s->reorder[i], rpd));
    dnnl_primitive_desc_destroy(rpd);
    return 0;
}

static dnnl_memory_t arg_mem(const setup *s, int i) { return s->prim[i] ? s->prim[i] : s->user[i]; }

/* Build the primitives for request k (op, geometry). */
static int build(setup *s, const long long *k, dnnl_engine_t eng, char *err, size_t esz) {
    int op = (int)k[0];
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
        wn = 5;
        long long a[5] = {g, o / g, cg, kh, kw}, b[5] = {o / g, 1, o, kw * cg * o, cg * o};
        memcpy(wd, a, sizeof a), memcpy(wsd, b, sizeof b);
    }
    dnnl_memory_desc_t xu, yu, wu, xa, ya, wa;
    CHK(dnnl_memory_desc_init_by_strides(&xu, 4, xd, dnnl_f32, xs));
    CHK(dnnl_memory_desc_init_by_strides(&yu, 4, yd, dnnl_f32, ys));
    CHK(dnnl_memory_desc_init_by_strides(&wu, wn, wd, dnnl_f32, wsd));
    CHK(dnnl_memory_desc_init_by_tag(&xa, 4, xd, dnnl_f32, dnnl_format_tag_any));
    CHK(dnnl_memory_desc_init_by_tag(&ya, 4, yd, dnnl_f32, dnnl_format_tag_any));
    CHK(dnnl_memory_desc_init_by_tag(&wa, wn, wd, dnnl_f32, dnnl_format_tag_any));
    dnnl_dims_t strides = {k[11], k[12]}, dil = {k[13] - 1, k[14] - 1};
    dnnl_dims_t pl = {k[15], k[17]}, pr = {k[16], k[18]};
    /* user tensors: a, b, out as in conv_kernels.h */
    const dnnl_memory_desc_t *um[3] = {op == 2 ? &yu : &xu, op == 1 ? &yu : &wu,
                                       op == 0 ? &yu : op == 1 ? &wu : &xu};
    for (int i = 0; i < 3; i++) {
        size_t bytes = dnnl_memory_desc_get_size(um[i]);
        s->buf[i] = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
        if (!s->buf[i]) { snprintf(err, esz, "out of memory"); return -1; }
        float *f = s->buf[i];
        for (size_t e = 0; e < bytes / 4; e++) f[e] = (float)((e * 7919) % 1000) / 1000.0f - 0.45f;
        CHK(dnnl_memory_create(&s->user[i], um[i], eng, s->buf[i]));
    }
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, pd;
    CHK(dnnl_dilated_convolution_forward_desc_init(&fd, op == 0 ? dnnl_forward_inference
                                                        : dnnl_forward_training,
                                           dnnl_convolution_direct, &xa, &wa, NULL, &ya,
                                           strides, dil, pl, pr));
    CHK(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
    if (op == 0) {
        pd = fpd;
        fpd = NULL;
    } else if (op == 1) {
        CHK(dnnl_dilated_convolution_backward_weights_desc_init(
            &bd, dnnl_convolution_direct, &xa, &wa, NULL, &ya, strides, dil, pl, pr));
        CHK(dnnl_primitive_desc_create(&pd, &bd, NULL, eng, fpd));
    } else {
        CHK(dnnl_dilated_convolution_backward_data_desc_init(
            &bd, dnnl_convolution_direct, &xa, &wa, &ya, strides, dil, pl, pr));
        CHK(dnnl_primitive_desc_create(&pd, &bd, NULL, eng, fpd));
    }
    static const dnnl_query_t q[3][3] = {
        {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
        {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
        {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md}};
    for (int i = 0; i < 3; i++)
        if (bind(s, i, dnnl_primitive_desc_query_md(pd, q[op][i], 0), eng, i == 2, err, esz))
            return -1;
    CHK(dnnl_primitive_create(&s->conv, pd));
    dnnl_primitive_desc_destroy(pd);
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    return 0;
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
    for (int i = 0; i < 3; i++) a[i] = (dnnl_exec_arg_t){args[op][i], arg_mem(s, i)};
    CHK(dnnl_primitive_execute(s->conv, strm, 3, a));
    if (s->prim[2]) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, s->prim[2]}, {DNNL_ARG_TO, s->user[2]}};
        CHK(dnnl_primitive_execute(s->reorder[2], strm, 2, r));
    }
    CHK(dnnl_stream_wait(strm));
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
    setup s = {0};
    char line[1024], err[256];
    static double times[4096];
    while (fgets(line, sizeof line, stdin)) {
        long long k[21];
        double secs;
        int got = sscanf(line, "conv %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "
                               "%lld %lld %lld %lld %lld %lld %lld %lld %lf",
                         &k[0], &k[1], &k[2], &k[3], &k[4], &k[5], &k[6], &k[7], &k[8], &k[9],
                         &k[10], &k[11], &k[12], &k[13], &k[14], &k[15], &k[16], &k[17], &k[18],
                         &k[19], &secs);
        if (got != 21) {
            printf("err bad request\n");
            fflush(stdout);
            continue;
        }
        k[20] = 0;
        err[0] = 0;
        int rc = 0;
        if (!s.valid || memcmp(s.key, k, sizeof k)) {
            release(&s);
            rc = build(&s, k, eng, err, sizeof err);
            if (!rc) rc = call(&s, (int)k[0], strm, err, sizeof err); /* warm-up */
            if (!rc) s.valid = 1, memcpy(s.key, k, sizeof k);
        }
        int cnt = 0;
        double t0 = now_ms();
        while (!rc && cnt < 512) {
            double a = now_ms();
            rc = call(&s, (int)k[0], strm, err, sizeof err);
            double b = now_ms();
            times[cnt++] = b - a;
            if (b - t0 >= secs * 1e3) break;
        }
        if (rc) {
            release(&s);
            printf("err %s\n", err);
        } else {
            printf("ok %d", cnt);
            for (int i = 0; i < cnt; i++) printf(" %.6f", times[i]);
            printf("\n");
        }
        fflush(stdout);
    }
    release(&s);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return 0;
}
