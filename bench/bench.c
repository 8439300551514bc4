/*
 * bench.c - `blockflow bench`: times the CPU convolution kernels on the cases of
 * bench/shapes.json and, in the same run, the same cases through the peers that are installed
 * (oneDNN through bench/peers/onednn_peer.c, PyTorch through bench/torch_peer.py).
 *
 *   blockflow bench [--cases FILE] [--ops LIST] [--threads N] [--rounds R] [--time S]
 *                   [--dtype f32|f64] [--isa generic|avx2|avx512] [--no-peers] [--json]
 *                   [--clock wall|cpu] [--device gpu ...]
 *
 * Every case runs with NHWC activations and HWIO filters (depthwise [fh,fw,C,M] = HWIO
 * [fh,fw,1,C*M]), TF SAME/VALID padding. Tensors and workspace are allocated once per
 * (case, op), filled with random non-zero data and warmed up. Then R rounds interleave the
 * implementations: ours, oneDNN, PyTorch, ours, ... Each round of each implementation runs
 * calls for about S/R seconds and records every call's time; the row reports the median and
 * min-max over all calls of all rounds, GFLOP/s = 2 x multiply-adds (padded taps counted) /
 * median, and ours / best peer median. Geometric means of the ratio close the table.
 * --dtype picks float or double tensors (ours and the peers alike; oneDNN has no f64
 * convolution, so its column is n/a then), --isa our kernels' instruction set (default: the
 * best this CPU runs; one it does not run is refused).
 * --clock cpu times each call in process CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of wall
 * time, ours and the peers' alike (the peers read $BF_BENCH_CLOCK, which the bench sets): on a
 * machine whose cores are shared with other work, the time a call spends descheduled is left
 * out. Meant for --threads 1; with more threads a call's CPU time is the sum over its
 * threads, spin-waiting included.
 *
 * Peer protocol (text lines over the peer's stdin/stdout). On start the peer prints
 *   ready <name> <version>
 * then for each request line
 *   conv <op> <n> <h> <w> <c> <kh> <kw> <kin_c> <out_c> <oh> <ow> <sh> <sw> <dh> <dw>
 *        <pad_top> <pad_bottom> <pad_left> <pad_right> <groups> <seconds> <dtype>
 * (op 0 = forward, 1 = backprop filter, 2 = backprop input; dtype f32 or f64, and a request
 * without it, the older 21-field form, means f32) it prints
 *   ok <count> <ms_1> ... <ms_count> [mode <name>]      or      err <message>
 * timing calls for about <seconds>, each call taking NHWC/HWIO tensors in and giving the
 * NHWC/HWIO result back, every layout conversion inside the timed call. A peer keeps the
 * tensors of the last request, so rounds after the first do not set up again. The optional
 * `mode <name>` says which of its configurations the peer timed (oneDNN: plain, wany or any,
 * chosen by a probe on the first request for a key; see bench/peers/onednn_peer.c); the
 * bench shows it next to the peer's time. A peer that cannot do the dtype answers err.
 */
#include "bench_gpu.h"
#include "exec.h"
#include "nn_ops/conv_kernels.h"
#include "nn_ops/cpu/conv_cpu_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_gpu.h"

#define BENCH_MAX_TIMES 4096
#define BENCH_PEERS 2
#define BENCH_BIG_FLOP 1e7 /* rows below this measure per-call overhead, not kernels */

typedef struct bench_opts {
    const char *cases;
    const char *ops;     /* comma list of TF op names or fwd,bwd_filter,bwd_input; NULL: all */
    int threads, rounds, json, peers;
    double seconds;      /* per implementation and row, over all rounds */
    bf_dtype dtype;      /* BF_DTYPE_F32 or BF_DTYPE_F64 */
    bf_conv_isa isa;     /* our kernels' instruction set (supported by this CPU) */
    int cpu_clock;       /* --clock cpu: per-call process CPU time instead of wall time */
} bench_opts;

typedef struct peer {
    const char *name;
    pid_t pid;
    FILE *to, *from;
    char version[64];
    int alive;
} peer;

typedef struct samples {
    double t[BENCH_MAX_TIMES];
    int n;
} samples;

/* ---- small helpers --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(samples *s) {
    if (s->n == 0) return NAN;
    qsort(s->t, (size_t)s->n, sizeof(double), cmp_double);
    return s->n % 2 ? s->t[s->n / 2] : 0.5 * (s->t[s->n / 2 - 1] + s->t[s->n / 2]);
}

static void push(samples *s, double ms) {
    if (s->n < BENCH_MAX_TIMES) s->t[s->n++] = ms;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? bf_malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) bf_free(buf), buf = NULL;
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

/* Directory of this program (for finding the peers next to it), "" when unknown. */
static void exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0) { buf[0] = 0; return; }
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
}

/* ---- peers ----------------------------------------------------------------------------------- */

/* Start argv[0] with pipes; wait for its "ready" line. Leaves p->alive 0 when it fails. */
static void peer_start(peer *p, char *const argv[]) {
    int in[2], out[2];
    if (access(argv[0], X_OK) != 0) return;
    if (pipe(in) || pipe(out)) return;
    /* our ends must not leak into later peers, or a peer never sees EOF on its stdin */
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    p->pid = pid;
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    char line[256];
    if (p->to && p->from && fgets(line, sizeof line, p->from) && !strncmp(line, "ready ", 6)) {
        char name[64] = "";
        if (sscanf(line, "ready %63s %63s", name, p->version) >= 1) p->alive = 1;
    }
    if (!p->alive) {
        if (p->to) fclose(p->to);
        if (p->from) fclose(p->from);
        p->to = p->from = NULL;
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

static void peer_stop(peer *p) {
    if (!p->pid) return;
    if (p->to) fclose(p->to);
    if (p->from) fclose(p->from);
    waitpid(p->pid, NULL, 0);
    p->pid = 0, p->alive = 0;
}

/* One timed round on a peer; appends its call times and copies the mode it names (if any)
 * into mode[16]. Returns 0 on success. */
static int peer_round(peer *p, bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                      double seconds, samples *s, char mode[16], char *err, size_t err_size) {
    if (!p->alive) return -1;
    fprintf(p->to,
            "conv %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "
            "%lld %lld %lld %lld %lld %.4f %s\n",
            (int)op, (long long)g->n, (long long)g->in_h, (long long)g->in_w,
            (long long)g->in_c, (long long)g->k_h, (long long)g->k_w, (long long)g->k_in_c,
            (long long)g->out_c, (long long)g->out_h, (long long)g->out_w,
            (long long)g->stride_h, (long long)g->stride_w, (long long)g->dil_h,
            (long long)g->dil_w, (long long)g->pad_top, (long long)g->pad_bottom,
            (long long)g->pad_left, (long long)g->pad_right, (long long)g->groups, seconds,
            dt == BF_DTYPE_F64 ? "f64" : "f32");
    fflush(p->to);
    static const size_t cap = 1 << 20;
    char *line = bf_malloc(cap);
    if (!line) return -1;
    int rc = -1;
    if (!fgets(line, (int)cap, p->from)) {
        snprintf(err, err_size, "%s peer exited", p->name);
        p->alive = 0;
    } else if (!strncmp(line, "ok ", 3)) {
        char *q = line + 3, *end;
        long cnt = strtol(q, &end, 10);
        for (long i = 0; i < cnt && end != q; i++) {
            q = end;
            double v = strtod(q, &end);
            if (end != q) push(s, v);
        }
        char m[16];
        if (sscanf(end, " mode %15s", m) == 1) memcpy(mode, m, sizeof m);
        rc = 0;
    } else {
        line[strcspn(line, "\n")] = 0;
        snprintf(err, err_size, "%s: %s", p->name, strncmp(line, "err ", 4) ? line : line + 4);
    }
    bf_free(line);
    return rc;
}

/* ---- our side -------------------------------------------------------------------------------- */

static double macs_of(const bf_conv_geom *g) {
    return (double)g->n * (double)g->out_h * (double)g->out_w * (double)g->out_c *
           (double)g->k_h * (double)g->k_w * (double)g->k_in_c;
}

static int64_t same_pad(int64_t in, int64_t f, int64_t s, int64_t d) {
    int64_t t = ((in + s - 1) / s - 1) * s + (f - 1) * d + 1 - in;
    return t > 0 ? t : 0;
}

static const char *op_names[2][3] = {
    {"Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput"},
    {"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
     "DepthwiseConv2dNativeBackpropInput"}};
static const char *op_short[3] = {"fwd", "bwd_filter", "bwd_input"};

static bool op_selected(const char *list, int op, int dw) {
    if (!list) return true;
    char buf[512];
    bf_strlcpy(buf, list, sizeof buf);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, op_names[dw][op]) || !strcmp(t, op_short[op])) return true;
    return false;
}

/* Build the geometry of a case; returns false (with a message) when the case is malformed. */
static bool case_geom(const cJSON *c, bf_conv_geom *g, int *depthwise, char *err, size_t esz) {
    const cJSON *in = cJSON_GetObjectItem(c, "input"), *f = cJSON_GetObjectItem(c, "filter");
    const cJSON *st = cJSON_GetObjectItem(c, "strides"), *dl = cJSON_GetObjectItem(c, "dilations");
    const char *pad = cJSON_GetStringValue(cJSON_GetObjectItem(c, "padding"));
    if (cJSON_GetArraySize(in) != 4 || cJSON_GetArraySize(f) != 4 || !pad) {
        snprintf(err, esz, "case needs input[4], filter[4], padding");
        return false;
    }
    int64_t v[4], w[4], s[4] = {1, 1, 1, 1}, d[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        v[i] = (int64_t)cJSON_GetArrayItem(in, i)->valuedouble;
        w[i] = (int64_t)cJSON_GetArrayItem(f, i)->valuedouble;
        if (cJSON_GetArraySize(st) == 4) s[i] = (int64_t)cJSON_GetArrayItem(st, i)->valuedouble;
        if (cJSON_GetArraySize(dl) == 4) d[i] = (int64_t)cJSON_GetArrayItem(dl, i)->valuedouble;
    }
    *depthwise = cJSON_IsTrue(cJSON_GetObjectItem(c, "depthwise"));
    bf_conv_geom r = {.n = v[0], .in_h = v[1], .in_w = v[2], .in_c = v[3], .k_h = w[0],
                      .k_w = w[1], .stride_h = s[1], .stride_w = s[2], .dil_h = d[1],
                      .dil_w = d[2]};
    if (*depthwise) r.groups = v[3], r.k_in_c = 1, r.out_c = v[3] * w[3];
    else r.groups = 1, r.k_in_c = w[2], r.out_c = w[3];
    if (r.stride_h < 1 || r.stride_w < 1 || r.dil_h < 1 || r.dil_w < 1 || r.k_h < 1 ||
        r.k_w < 1 || (!*depthwise && w[2] != v[3])) {
        snprintf(err, esz, "bad strides, dilations or filter");
        return false;
    }
    if (!strcmp(pad, "SAME")) {
        int64_t th = same_pad(r.in_h, r.k_h, r.stride_h, r.dil_h);
        int64_t tw = same_pad(r.in_w, r.k_w, r.stride_w, r.dil_w);
        r.pad_top = th / 2, r.pad_bottom = th - th / 2;
        r.pad_left = tw / 2, r.pad_right = tw - tw / 2;
    }
    int64_t eh = (r.k_h - 1) * r.dil_h + 1, ew = (r.k_w - 1) * r.dil_w + 1;
    r.out_h = (r.in_h + r.pad_top + r.pad_bottom - eh) / r.stride_h + 1;
    r.out_w = (r.in_w + r.pad_left + r.pad_right - ew) / r.stride_w + 1;
    if (r.out_h < 1 || r.out_w < 1) {
        snprintf(err, esz, "empty output");
        return false;
    }
    *g = r;
    return true;
}

typedef struct ours {
    void *a, *b, *out; /* float or double, as dtype */
    void *ws;
    size_t ws_size;
    bf_dtype dtype;
    bf_conv_isa isa;
    bf_exec ex;
} ours;

/* n elements of es bytes, or NULL (also when the size overflows). */
static void *alloc_elems(size_t n, size_t es, bool zero) {
    size_t bytes;
    return bf_size_mul(n, es, &bytes) ? bf_aligned_alloc(bytes ? bytes : 64, zero) : NULL;
}

static bool ours_setup(ours *o, bf_conv_op op, const bf_conv_geom *g, bf_dtype dt,
                       bf_conv_isa isa, bf_pool *pool, int nt) {
    size_t nx = (size_t)(g->n * g->in_h * g->in_w * g->in_c);
    size_t ny = (size_t)(g->n * g->out_h * g->out_w * g->out_c);
    size_t nw = (size_t)(g->k_h * g->k_w * g->k_in_c * g->out_c);
    size_t na = op == BF_CONV_BWD_INPUT ? ny : nx, nb = op == BF_CONV_BWD_FILTER ? ny : nw;
    size_t no = op == BF_CONV_FWD ? ny : op == BF_CONV_BWD_FILTER ? nw : nx;
    size_t es = dt == BF_DTYPE_F64 ? sizeof(double) : sizeof(float);
    o->dtype = dt, o->isa = isa;
    o->ws_size = bf_conv_cpu_workspace_isa(isa, op, g, dt, nt);
    if (o->ws_size == SIZE_MAX) return false;
    o->a = alloc_elems(na, es, false);
    o->b = alloc_elems(nb, es, false);
    o->out = alloc_elems(no, es, true);
    o->ws = bf_aligned_alloc(o->ws_size ? o->ws_size : 64, true);
    if (!o->a || !o->b || !o->out || !o->ws) return false;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < na + nb; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        float v = (float)((s >> 40) & 0xffff) / 65536.0f * 1.8f - 0.9f;
        if (fabsf(v) < 0.1f) v = 0.5f;
        void *dst = i < na ? o->a : o->b;
        size_t j = i < na ? i : i - na;
        if (dt == BF_DTYPE_F64) ((double *)dst)[j] = v;
        else ((float *)dst)[j] = v;
    }
    o->ex = (bf_exec){.pool = pool, .n_threads = nt, .workspace = o->ws,
                      .workspace_size = o->ws_size};
    return true;
}

static void ours_call(ours *o, bf_conv_op op, const bf_conv_geom *g) {
    if (o->dtype == BF_DTYPE_F64)
        bf_conv_cpu_f64_isa(o->isa, op, g, o->a, o->b, o->out, &o->ex);
    else bf_conv_cpu_f32_isa(o->isa, op, g, o->a, o->b, o->out, &o->ex);
}

static void ours_free(ours *o) {
    bf_aligned_free(o->a), bf_aligned_free(o->b), bf_aligned_free(o->out);
    bf_aligned_free(o->ws);
    memset(o, 0, sizeof *o);
}

/* Process CPU time in seconds (--clock cpu). */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void ours_round(ours *o, bf_conv_op op, const bf_conv_geom *g, double seconds,
                       int cpu_clock, samples *s) {
    double t0 = bf_now();
    int calls = 0;
    do {
        double a = cpu_clock ? cpu_now() : bf_now();
        ours_call(o, op, g);
        push(s, ((cpu_clock ? cpu_now() : bf_now()) - a) * 1e3);
        calls++;
    } while (bf_now() - t0 < seconds && calls < BENCH_MAX_TIMES / 8);
}

/* ---- the run --------------------------------------------------------------------------------- */

typedef struct row_result {
    double med, lo, hi, gflops, peer_med[BENCH_PEERS], peer_min[BENCH_PEERS], ratio;
} row_result;

static void usage(FILE *f) {
    fprintf(f, "usage: blockflow bench [--cases FILE] [--ops LIST] [--threads N] [--rounds R]\n"
               "                       [--time SECONDS] [--dtype f32|f64]\n"
               "                       [--isa generic|avx2|avx512] [--no-peers] [--json]\n"
               "                       [--clock wall|cpu] [--device cpu|gpu]\n"
               "  --dtype  float or double tensors, ours and the peers' (default f32; oneDNN\n"
               "           has no f64 convolution)\n"
               "  --isa    our CPU kernels' instruction set (default: the best this CPU runs)\n"
               "  --clock  cpu: time each call in process CPU time, ours and the peers'\n"
               "           (a shared machine's descheduled time left out; for --threads 1)\n");
}

/* The ISA named `name`, or BF_CONV_ISA_COUNT when it names none. */
static bf_conv_isa isa_by_name(const char *name) {
    for (int i = 0; i < BF_CONV_ISA_COUNT; i++)
        if (!strcmp(name, bf_conv_cpu_isa_name((bf_conv_isa)i))) return (bf_conv_isa)i;
    return BF_CONV_ISA_COUNT;
}

int bf_bench_main(int argc, char **argv) {
    bench_opts o = {.cases = NULL, .threads = (int)sysconf(_SC_NPROCESSORS_ONLN), .rounds = 3,
                    .seconds = 0.9, .peers = 1, .dtype = BF_DTYPE_F32,
                    .isa = bf_conv_cpu_best_isa()};
    /* --device gpu first: the GPU bench has flags of its own (--dtype float16, ...) that may
     * come before it */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--device") && !strcmp(argv[i + 1], "gpu"))
            return bf_bench_gpu_main(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--device") && v) {
            if (strcmp(v, "cpu")) { usage(stderr); return 2; }
            i++;
        } else if (!strcmp(a, "--cases") && v) o.cases = v, i++;
        else if (!strcmp(a, "--ops") && v) o.ops = v, i++;
        else if (!strcmp(a, "--threads") && v) o.threads = atoi(v), i++;
        else if (!strcmp(a, "--rounds") && v) o.rounds = atoi(v), i++;
        else if (!strcmp(a, "--time") && v) o.seconds = atof(v), i++;
        else if (!strcmp(a, "--dtype") && v) {
            /* float32/float64 as well: the spelling of `bench --device gpu --dtype` */
            bool f32 = !strcmp(v, "f32") || !strcmp(v, "float32");
            bool f64 = !strcmp(v, "f64") || !strcmp(v, "float64");
            if (!f32 && !f64) {
                fprintf(stderr, "blockflow bench: --dtype %s: not f32 or f64 on the CPU\n", v);
                return 2;
            }
            o.dtype = f64 ? BF_DTYPE_F64 : BF_DTYPE_F32, i++;
        } else if (!strcmp(a, "--isa") && v) {
            o.isa = isa_by_name(v), i++;
            if (o.isa == BF_CONV_ISA_COUNT) {
                fprintf(stderr, "blockflow bench: --isa %s: not generic, avx2 or avx512\n", v);
                return 2;
            }
            if (!bf_conv_cpu_isa_supported(o.isa)) {
                fprintf(stderr,
                        "blockflow bench: --isa %s: this CPU does not support it (best: %s)\n",
                        v, bf_conv_cpu_isa_name(bf_conv_cpu_best_isa()));
                return 2;
            }
        } else if (!strcmp(a, "--json")) o.json = 1;
        else if (!strcmp(a, "--no-peers")) o.peers = 0;
        else if (!strcmp(a, "--clock") && v && (!strcmp(v, "wall") || !strcmp(v, "cpu")))
            o.cpu_clock = !strcmp(v, "cpu"), i++;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    if (o.threads < 1 || o.rounds < 1 || !(o.seconds > 0)) { usage(stderr); return 2; }

    char dir[PATH_MAX], path[PATH_MAX + 64];
    exe_dir(dir, sizeof dir);
    const char *cases_path = o.cases;
    if (!cases_path) {
        cases_path = "bench/shapes.json";
        if (access(cases_path, R_OK) != 0) {
            snprintf(path, sizeof path, "%s/../bench/shapes.json", dir);
            cases_path = path;
        }
    }
    char *text = read_file(cases_path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    bf_free(text);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "blockflow bench: cannot read cases from %s\n", cases_path);
        cJSON_Delete(root);
        return 1;
    }

    /* peers: oneDNN program next to us (or $BF_ONEDNN_PEER), torch script ($BF_TORCH_PEER) */
    char nt_s[16];
    snprintf(nt_s, sizeof nt_s, "%d", o.threads);
    setenv("OMP_NUM_THREADS", nt_s, 1);
    setenv("BF_BENCH_CLOCK", o.cpu_clock ? "cpu" : "wall", 1); /* the peers time as we do */
    peer peers[BENCH_PEERS] = {{.name = "oneDNN"}, {.name = "PyTorch"}};
    if (o.peers) {
        char p1[PATH_MAX + 64], p2[PATH_MAX + 64];
        const char *e1 = getenv("BF_ONEDNN_PEER"), *e2 = getenv("BF_TORCH_PEER");
        snprintf(p1, sizeof p1, "%s", e1 ? e1 : "");
        if (!e1) snprintf(p1, sizeof p1, "%s/blockflow-onednn-peer", dir);
        if (e2) snprintf(p2, sizeof p2, "%s", e2);
        else if (access("bench/torch_peer.py", R_OK) == 0)
            snprintf(p2, sizeof p2, "bench/torch_peer.py");
        else snprintf(p2, sizeof p2, "%s/../bench/torch_peer.py", dir);
        char *a1[] = {p1, nt_s, NULL};
        peer_start(&peers[0], a1);
        const char *py = getenv("BF_PYTHON") ? getenv("BF_PYTHON") : "/usr/bin/python3";
        char pyb[PATH_MAX];
        bf_strlcpy(pyb, py, sizeof pyb);
        if (access(p2, R_OK) == 0) {
            char *a2[] = {pyb, p2, nt_s, NULL};
            peer_start(&peers[1], a2);
        }
    }
    const char *dtype_name = o.dtype == BF_DTYPE_F64 ? "f64" : "f32";
    bf_pool *pool = NULL;
    bf_error err = {0};
    if (o.threads > 1 && bf_pool_new(o.threads, &pool, &err) != BF_OK) {
        fprintf(stderr, "blockflow bench: %s\n", err.message);
        for (int p = 0; p < BENCH_PEERS; p++) peer_stop(&peers[p]);
        cJSON_Delete(root);
        return 1;
    }
    if (!o.json) {
        printf("blockflow bench: %s, %d thread%s, CPU kernels %s, %d rounds x %.2f s, %s "
               "time, peers:",
               dtype_name, o.threads, o.threads > 1 ? "s" : "", bf_conv_cpu_isa_name(o.isa),
               o.rounds, o.seconds / o.rounds, o.cpu_clock ? "CPU" : "wall");
        for (int p = 0; p < BENCH_PEERS; p++)
            printf(" %s %s", peers[p].name, peers[p].alive ? peers[p].version : "n/a");
        printf("\n\n%-24s %-36s %9s %19s %8s %15s %9s %7s\n", "case", "op", "median_ms",
               "min-max ms", "GFLOP/s", "oneDNN/mode", "PyTorch", "ratio");
    }
    /* geometric means of ours/best-peer over groups: dense fwd/bf/bi, dw fwd/bf/bi */
    double lsum[2][3] = {{0}}, lall = 0, lbig = 0;
    int lcnt[2][3] = {{0}}, call = 0, cbig = 0, status = 0;
    samples *mine = bf_malloc(sizeof(samples)), *theirs = bf_malloc(sizeof(samples) * BENCH_PEERS);
    /* a peer's last error: the same one again (oneDNN refusing every f64 row) is not repeated */
    char last_perr[BENCH_PEERS][256] = {{0}};
    if (!mine || !theirs) {
        fprintf(stderr, "blockflow bench: out of memory\n");
        bf_free(mine), bf_free(theirs);
        for (int p = 0; p < BENCH_PEERS; p++) peer_stop(&peers[p]);
        bf_pool_free(pool);
        cJSON_Delete(root);
        return 1;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *cname = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
        bf_conv_geom g;
        int dw;
        char msg[256];
        if (!case_geom(c, &g, &dw, msg, sizeof msg)) {
            fprintf(stderr, "blockflow bench: case %s: %s\n", cname ? cname : "?", msg);
            status = 1;
            continue;
        }
        for (int op = 0; op < 3; op++) {
            if (!op_selected(o.ops, op, dw)) continue;
            ours me = {0};
            if (!ours_setup(&me, (bf_conv_op)op, &g, o.dtype, o.isa, pool, o.threads)) {
                fprintf(stderr, "blockflow bench: %s: out of memory\n", cname);
                ours_free(&me);
                status = 1;
                continue;
            }
            /* warm-up: first touch of tensors and workspace, caches, the pool */
            ours_call(&me, (bf_conv_op)op, &g);
            ours_call(&me, (bf_conv_op)op, &g);
            mine->n = 0;
            int peer_ok[BENCH_PEERS];
            char peer_mode[BENCH_PEERS][16] = {{0}};
            for (int p = 0; p < BENCH_PEERS; p++) theirs[p].n = 0, peer_ok[p] = peers[p].alive;
            double per = o.seconds / o.rounds;
            for (int r = 0; r < o.rounds; r++) {
                ours_round(&me, (bf_conv_op)op, &g, per, o.cpu_clock, mine);
                for (int p = 0; p < BENCH_PEERS; p++) {
                    if (!peer_ok[p]) continue;
                    char perr[256] = "";
                    if (peer_round(&peers[p], (bf_conv_op)op, &g, o.dtype, per, &theirs[p],
                                   peer_mode[p], perr, sizeof perr)) {
                        peer_ok[p] = 0;
                        if (strcmp(perr, last_perr[p]))
                            fprintf(stderr, "blockflow bench: %s %s: %s%s\n", cname,
                                    op_names[dw][op], perr,
                                    peers[p].alive ? " (not repeated for later rows)" : "");
                        bf_strlcpy(last_perr[p], perr, sizeof last_perr[p]);
                    }
                }
            }
            ours_free(&me);
            row_result rr = {.med = median_of(mine), .lo = mine->t[0],
                             .hi = mine->t[mine->n - 1], .ratio = NAN};
            rr.gflops = 2.0 * macs_of(&g) / (rr.med * 1e-3) / 1e9;
            double best = INFINITY;
            for (int p = 0; p < BENCH_PEERS; p++) {
                rr.peer_med[p] = peer_ok[p] ? median_of(&theirs[p]) : NAN;
                rr.peer_min[p] = peer_ok[p] && theirs[p].n ? theirs[p].t[0] : NAN; /* sorted */
                if (rr.peer_med[p] < best) best = rr.peer_med[p];
            }
            if (isfinite(best)) {
                rr.ratio = rr.med / best;
                lsum[dw][op] += log(rr.ratio), lcnt[dw][op]++;
                lall += log(rr.ratio), call++;
                if (2.0 * macs_of(&g) >= BENCH_BIG_FLOP) lbig += log(rr.ratio), cbig++;
            }
            if (o.json) {
                printf("{\"case\":\"%s\",\"op\":\"%s\",\"dtype\":\"%s\",\"isa\":\"%s\","
                       "\"threads\":%d,\"clock\":\"%s\",\"median_ms\":%.6g,"
                       "\"min_ms\":%.6g,\"max_ms\":%.6g,\"gflops\":%.6g,\"calls\":%d",
                       cname, op_names[dw][op], dtype_name, bf_conv_cpu_isa_name(o.isa),
                       o.threads, o.cpu_clock ? "cpu" : "wall", rr.med, rr.lo, rr.hi,
                       rr.gflops, mine->n);
                for (int p = 0; p < BENCH_PEERS; p++) {
                    const char *pn = p ? "torch" : "onednn";
                    if (isfinite(rr.peer_med[p]))
                        printf(",\"%s_median_ms\":%.6g,\"%s_min_ms\":%.6g", pn, rr.peer_med[p],
                               pn, rr.peer_min[p]);
                    else printf(",\"%s_median_ms\":null", pn);
                }
                if (isfinite(rr.peer_med[0]) && peer_mode[0][0])
                    printf(",\"onednn_mode\":\"%s\"", peer_mode[0]);
                else printf(",\"onednn_mode\":null");
                if (isfinite(rr.ratio)) printf(",\"ratio_best_peer\":%.4f}\n", rr.ratio);
                else printf(",\"ratio_best_peer\":null}\n");
            } else {
                char mm[40], pc[BENCH_PEERS][48], rc[16];
                snprintf(mm, sizeof mm, "%.3f-%.3f", rr.lo, rr.hi);
                for (int p = 0; p < BENCH_PEERS; p++) {
                    if (isfinite(rr.peer_med[p]) && peer_mode[p][0])
                        snprintf(pc[p], sizeof pc[p], "%.3f/%s", rr.peer_med[p], peer_mode[p]);
                    else if (isfinite(rr.peer_med[p]))
                        snprintf(pc[p], sizeof pc[p], "%.3f", rr.peer_med[p]);
                    else
                        snprintf(pc[p], sizeof pc[p], "n/a");
                }
                if (isfinite(rr.ratio)) snprintf(rc, sizeof rc, "%.2fx", rr.ratio);
                else snprintf(rc, sizeof rc, "n/a");
                printf("%-24s %-36s %9.3f %19s %8.1f %15s %9s %7s\n", cname, op_names[dw][op],
                       rr.med, mm, rr.gflops, pc[0], pc[1], rc);
            }
            fflush(stdout);
        }
    }
    static const char *gname[2][3] = {
        {"Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput"},
        {"Depthwise fwd", "Depthwise backprop filter", "Depthwise backprop input"}};
    if (!o.json) {
        printf("\ngeometric mean of ours / best peer (lower is better):\n");
        for (int d = 0; d < 2; d++) {
            for (int op = 0; op < 3; op++)
                if (lcnt[d][op])
                    printf("  %-28s %.3fx (%d rows)\n", gname[d][op],
                           exp(lsum[d][op] / lcnt[d][op]), lcnt[d][op]);
            int n2 = lcnt[d][1] + lcnt[d][2];
            if (n2)
                printf("  %-28s %.3fx (%d rows)\n",
                       d ? "Depthwise backprop (both)" : "Conv2D backprop (both)",
                       exp((lsum[d][1] + lsum[d][2]) / n2), n2);
        }
        if (call) printf("  %-28s %.3fx (%d rows)\n", "all", exp(lall / call), call);
        if (cbig)
            printf("  %-28s %.3fx (%d rows; per-call overhead cases left out)\n",
                   "all >= 10 MFLOP", exp(lbig / cbig), cbig);
        else if (!call) printf("  n/a (no peer measured)\n");
    }
    bf_free(mine), bf_free(theirs);
    for (int p = 0; p < BENCH_PEERS; p++) peer_stop(&peers[p]);
    bf_pool_free(pool);
    cJSON_Delete(root);
    return status;
}
