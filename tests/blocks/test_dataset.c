/*
 * test_dataset.c - the Dataset block (blocks/data_ops/dataset.c), through the public API:
 * files written here byte by byte (.npy headers, stored and deflated ZIP archives for .npz,
 * MNIST's IDX format) with writers of their own, pages stepped with bf_session_step, and each
 * batch compared with the rows it must hold.
 *
 * The data makes every row tell which sample it is: file row i holds i * 100 + k (k the
 * element within the row) and file2 holds i, so a batch shows its samples, their order and
 * whether the two files stayed in lockstep.
 *
 * Checked: batches in file order without shuffle, the short last batch and drop_remainder,
 * the epoch and index outputs and the cursor read back (int64 [epoch, index]); shuffle visits
 * every sample once per epoch, in an order that changes with the epoch, the same for the same
 * seed in another session and different for another seed; .npy, .npz (key, key2, a lone array
 * without key) and IDX files, their dtypes (IDX bytes as float32 images / int32 labels, raw
 * 0..255, never scaled; `dtype` conversions); a plain run does not advance, reset rewinds;
 * the cursor saved to a checkpoint and loaded into a new session goes on with the same batches,
 * and bad cursors are refused; malformed files and attributes are refused when the session is
 * made, with the block, the attribute and a message naming the problem.
 */
#include "bf_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BF_MIN_INT(a, b) ((a) < (b) ? (a) : (b))
#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["

static bf_context *new_ctx(void) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    return ctx;
}

/* Try to make a session on a page of one Dataset "data" with these attributes. */
static bf_status try_dataset(bf_context *ctx, const char *attrs, bf_session **s, bf_error *e) {
    char json[4096];
    int n = snprintf(json, sizeof(json),
                     HEAD "{\"id\":\"data\",\"type\":\"Dataset\",\"attrs\":%s}]}", attrs);
    ck_assert_int_lt(n, (int)sizeof(json));
    bf_page *page = NULL;
    *s = NULL;
    bf_status st = bf_page_load_string(ctx, json, strlen(json), "d.json", NULL, &page, NULL, e);
    return st ? st : bf_session_new(ctx, page, s, e); /* the loader refuses an empty name */
}

static bf_session *dataset(bf_context *ctx, const char *fmt, ...) {
    char attrs[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(attrs, sizeof(attrs), fmt, ap);
    va_end(ap);
    bf_session *s = NULL;
    bf_error e = {0};
    if (try_dataset(ctx, attrs, &s, &e))
        ck_abort_msg("page or session: %s %s %s", e.code, e.attr, e.message);
    return s;
}

/* ---- files, written here -------------------------------------------------------------------- */

static void put32le(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put16le(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
}

/* A whole .npy file (version 1.0) in buf; returns its size. */
static size_t npy_bytes(unsigned char *buf, size_t size, const char *descr, int rank,
                        const int64_t *dims, const void *data, size_t nbytes) {
    char shape[128] = "(";
    for (int i = 0; i < rank; i++)
        snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "%lld,%s",
                 (long long)dims[i], i + 1 < rank ? " " : "");
    strcat(shape, ")");
    char dict[256];
    int d = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
    size_t hlen = (size_t)d + 1;
    while ((10 + hlen) % 64) hlen++;
    ck_assert_uint_le(10 + hlen + nbytes, size);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    put16le(buf + 8, (uint32_t)hlen);
    memset(buf + 10, ' ', hlen);
    memcpy(buf + 10, dict, (size_t)d);
    buf[10 + hlen - 1] = '\n';
    memcpy(buf + 10 + hlen, data, nbytes);
    return 10 + hlen + nbytes;
}

static void write_npy(const char *name, const char *descr, int rank, const int64_t *dims,
                      const void *data, size_t nbytes) {
    size_t cap = nbytes + 256;
    unsigned char *buf = malloc(cap);
    size_t n = npy_bytes(buf, cap, descr, rank, dims, data, nbytes);
    bf_write_bytes(bf_sp(name), buf, n);
    free(buf);
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

/* A ZIP archive of members (name, bytes) as numpy.savez writes it: each stored (method 0),
 * or marked deflated (method 8) when `deflate` (its bytes are then not real deflate data: a
 * reader must refuse the method before it looks at them). */
typedef struct member {
    const char *name;
    const unsigned char *data;
    size_t n;
} member;

static void write_zip(const char *name, const member *m, int count, bool deflate) {
    size_t cap = 1024;
    for (int i = 0; i < count; i++) cap += 2 * (m[i].n + 128);
    unsigned char *buf = calloc(1, cap), *cd = calloc(1, 64 * 1024);
    size_t at = 0, cd_n = 0;
    for (int i = 0; i < count; i++) {
        size_t nl = strlen(m[i].name);
        uint32_t crc = crc32_of(m[i].data, m[i].n);
        unsigned char *h = buf + at;
        put32le(h, 0x04034b50u);
        put16le(h + 4, 20);
        put16le(h + 8, deflate ? 8 : 0);
        put32le(h + 14, crc);
        put32le(h + 18, (uint32_t)m[i].n);
        put32le(h + 22, (uint32_t)m[i].n);
        put16le(h + 26, (uint32_t)nl);
        memcpy(h + 30, m[i].name, nl);
        memcpy(h + 30 + nl, m[i].data, m[i].n);
        unsigned char *c = cd + cd_n;
        put32le(c, 0x02014b50u);
        put16le(c + 4, 20);
        put16le(c + 6, 20);
        put16le(c + 10, deflate ? 8 : 0);
        put32le(c + 16, crc);
        put32le(c + 20, (uint32_t)m[i].n);
        put32le(c + 24, (uint32_t)m[i].n);
        put16le(c + 28, (uint32_t)nl);
        put32le(c + 42, (uint32_t)at);
        memcpy(c + 46, m[i].name, nl);
        cd_n += 46 + nl;
        at += 30 + nl + m[i].n;
    }
    memcpy(buf + at, cd, cd_n);
    unsigned char *e = buf + at + cd_n;
    put32le(e, 0x06054b50u);
    put16le(e + 8, (uint32_t)count);
    put16le(e + 10, (uint32_t)count);
    put32le(e + 12, (uint32_t)cd_n);
    put32le(e + 16, (uint32_t)at);
    bf_write_bytes(bf_sp(name), buf, at + cd_n + 22);
    free(buf);
    free(cd);
}

/* An IDX file: magic 0 0 type rank, big-endian dims, then `n` data bytes. */
static void write_idx(const char *name, int type, int rank, const uint32_t *dims,
                      const unsigned char *data, size_t n) {
    unsigned char *buf = malloc(4 + 4 * (size_t)rank + n + 1);
    buf[0] = 0, buf[1] = 0, buf[2] = (unsigned char)type, buf[3] = (unsigned char)rank;
    for (int i = 0; i < rank; i++)
        for (int k = 0; k < 4; k++) buf[4 + 4 * i + k] = (unsigned char)(dims[i] >> (24 - 8 * k));
    memcpy(buf + 4 + 4 * rank, data, n);
    bf_write_bytes(bf_sp(name), buf, 4 + 4 * (size_t)rank + n);
    free(buf);
}

/* x.npy: float32 [n, 3, 2] with x[i, k] = i * 100 + k; y.npy: int32 [n] with y[i] = i. */
static void write_xy(int64_t n) {
    float *x = malloc((size_t)n * 6 * sizeof(float));
    int32_t *y = malloc((size_t)n * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        y[i] = (int32_t)i;
        for (int k = 0; k < 6; k++) x[i * 6 + k] = (float)(i * 100 + k);
    }
    const int64_t xd[3] = {n, 3, 2};
    write_npy("x.npy", "<f4", 3, xd, x, (size_t)n * 6 * sizeof(float));
    write_npy("y.npy", "<i4", 1, xd, y, (size_t)n * sizeof(int32_t));
    free(x);
    free(y);
}

/* ---- steps and batches ----------------------------------------------------------------------- */

static double elem(const bf_tensor *t, int64_t i) {
    const void *d = bf_tensor_cdata(t);
    switch (bf_tensor_dtype(t)) {
    case BF_DTYPE_F32: return ((const float *)d)[i];
    case BF_DTYPE_F64: return ((const double *)d)[i];
    case BF_DTYPE_I32: return ((const int32_t *)d)[i];
    case BF_DTYPE_I64: return (double)((const int64_t *)d)[i];
    default: ck_abort_msg("dtype %s", bf_dtype_name(bf_tensor_dtype(t))); return 0;
    }
}

/* What one step yielded. */
typedef struct batch {
    int64_t rows, epoch, index;
    int64_t sample[64]; /* from batch2 */
} batch;

/*
 * One step; checks that batch (dtype `dt`, [rows, 3, 2]) and batch2 (dtype `dt2`, [rows]) show
 * the same samples row by row, and returns them.
 */
static batch step_batch(bf_session *s, bf_dtype dt, bf_dtype dt2) {
    static const char *const fetches[4] = {"data:batch", "data:batch2", "data:epoch",
                                           "data:index"};
    bf_step_options o;
    bf_step_options_init(&o);
    o.fetches = fetches;
    o.n_fetches = 4;
    bf_error e = {0};
    if (bf_session_step(s, 1, &o, NULL, &e)) ck_abort_msg("step: %s %s", e.code, e.message);
    const bf_tensor *x = bf_session_output(s, "data", "batch");
    const bf_tensor *y = bf_session_output(s, "data", "batch2");
    const bf_tensor *ep = bf_session_output(s, "data", "epoch");
    const bf_tensor *ix = bf_session_output(s, "data", "index");
    ck_assert(x && y && ep && ix);
    batch b = {.rows = bf_tensor_dims(y)[0]};
    ck_assert_int_eq(bf_tensor_dtype(x), dt);
    ck_assert_int_eq(bf_tensor_dtype(y), dt2);
    ck_assert_int_eq(bf_tensor_rank(x), 3);
    ck_assert_int_eq(bf_tensor_rank(y), 1);
    ck_assert_int_eq(bf_tensor_dims(x)[0], b.rows);
    ck_assert_int_eq(bf_tensor_dims(x)[1], 3);
    ck_assert_int_eq(bf_tensor_dims(x)[2], 2);
    ck_assert_int_eq(bf_tensor_dtype(ep), BF_DTYPE_I64);
    ck_assert_int_eq(bf_tensor_rank(ep), 0);
    ck_assert_int_eq(bf_tensor_rank(ix), 0);
    b.epoch = (int64_t)elem(ep, 0);
    b.index = (int64_t)elem(ix, 0);
    ck_assert_int_le(b.rows, 64);
    for (int64_t r = 0; r < b.rows; r++) {
        b.sample[r] = (int64_t)elem(y, r);
        for (int k = 0; k < 6; k++)
            if (elem(x, r * 6 + k) != (double)(b.sample[r] * 100 + k))
                ck_abort_msg("row %lld element %d is %g: not sample %lld's", (long long)r, k,
                             elem(x, r * 6 + k), (long long)b.sample[r]);
    }
    return b;
}

static void expect_cursor(bf_session *s, int64_t epoch, int64_t index) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_read_state(s, "data", &t, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_I64);
    ck_assert_int_eq(bf_tensor_rank(t), 1);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 2);
    const int64_t *c = bf_tensor_cdata(t);
    ck_assert_int_eq(c[0], epoch);
    ck_assert_int_eq(c[1], index);
    bf_tensor_free(t);
}

static void expect_rows(const batch *b, int64_t first, int64_t rows, int64_t epoch,
                        int64_t index) {
    ck_assert_int_eq(b->rows, rows);
    ck_assert_int_eq(b->epoch, epoch);
    ck_assert_int_eq(b->index, index);
    for (int64_t r = 0; r < rows; r++) ck_assert_int_eq(b->sample[r], first + r);
}

START_TEST(in_order_with_short_batch) {
    write_xy(10);
    bf_context *ctx = new_ctx();
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4}",
                            bf_sp("x.npy"), bf_sp("y.npy"));
    expect_cursor(s, 0, 0);
    /* 10 samples by 4: [0,4) [4,8) [8,10), then the next epoch from 0. */
    static const int64_t first[7] = {0, 4, 8, 0, 4, 8, 0}, rows[7] = {4, 4, 2, 4, 4, 2, 4};
    for (int k = 0; k < 7; k++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        expect_rows(&b, first[k], rows[k], k / 3, k % 3);
        expect_cursor(s, (k + 1) / 3, (k + 1) % 3);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(drop_remainder) {
    write_xy(10);
    bf_context *ctx = new_ctx();
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4,"
                                 "\"drop_remainder\":true}",
                            bf_sp("x.npy"), bf_sp("y.npy"));
    for (int k = 0; k < 5; k++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        expect_rows(&b, (k % 2) * 4, 4, k / 2, k % 2);
    }
    bf_session_free(s);
    /* batch_size equal to the samples: one batch per epoch; larger: one short batch. */
    s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":10,"
                     "\"drop_remainder\":true}", bf_sp("x.npy"), bf_sp("y.npy"));
    for (int k = 0; k < 2; k++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        expect_rows(&b, 0, 10, k, 0);
    }
    bf_session_free(s);
    s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":1000000000000}",
                bf_sp("x.npy"), bf_sp("y.npy"));
    batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    expect_rows(&b, 0, 10, 0, 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* The samples of `epochs` epochs (n samples by 3), epoch by epoch, into order[e][n]. */
static void shuffled_epochs(bf_session *s, int64_t n, int epochs, int64_t order[][40]) {
    int64_t per = (n + 2) / 3;
    for (int e = 0; e < epochs; e++) {
        int64_t at = 0;
        for (int64_t k = 0; k < per; k++) {
            batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
            ck_assert_int_eq(b.epoch, e);
            ck_assert_int_eq(b.index, k);
            ck_assert_int_eq(b.rows, (n - k * 3 < 3 ? n - k * 3 : 3));
            for (int64_t r = 0; r < b.rows; r++) order[e][at++] = b.sample[r];
        }
        ck_assert_int_eq(at, n);
    }
}

START_TEST(shuffle_per_epoch) {
    enum { N = 40, EPOCHS = 3 };
    write_xy(N);
    bf_context *ctx = new_ctx();
    int64_t a[EPOCHS][40], b[EPOCHS][40], c[EPOCHS][40];
    const char *fmt = "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":3,\"shuffle\":true,"
                      "\"seed\":%d}";
    bf_session *s = dataset(ctx, fmt, bf_sp("x.npy"), bf_sp("y.npy"), 5);
    shuffled_epochs(s, N, EPOCHS, a);
    bf_session_free(s);
    for (int e = 0; e < EPOCHS; e++) {
        /* every sample once per epoch */
        int seen[N] = {0};
        for (int i = 0; i < N; i++) {
            ck_assert(a[e][i] >= 0 && a[e][i] < N);
            ck_assert_int_eq(seen[a[e][i]]++, 0);
        }
        /* shuffled: not the file's order, and not the previous epoch's */
        int same = 0;
        for (int i = 0; i < N; i++) same += a[e][i] == i;
        ck_assert_int_lt(same, N / 2);
        if (e) ck_assert(memcmp(a[e], a[e - 1], sizeof(a[e])) != 0);
    }
    /* The same seed in another session: the same batches; another seed: another order. */
    s = dataset(ctx, fmt, bf_sp("x.npy"), bf_sp("y.npy"), 5);
    shuffled_epochs(s, N, EPOCHS, b);
    bf_session_free(s);
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
    s = dataset(ctx, fmt, bf_sp("x.npy"), bf_sp("y.npy"), 6);
    shuffled_epochs(s, N, 1, c);
    bf_session_free(s);
    ck_assert(memcmp(a[0], c[0], sizeof(a[0])) != 0);
    bf_context_free(ctx);
}
END_TEST

/*
 * The orders are uniform: 4 samples in one batch per epoch for 2400 epochs, each of the 24
 * orders about 100 times (chi-square with 23 degrees of freedom below 70, which a uniform
 * shuffle exceeds about once in 10^6 seeds; the seed is fixed, so the test is deterministic).
 * A shuffle that misses orders (Sattolo's cycles, a loop stopping one place early) fails.
 */
START_TEST(shuffle_is_uniform) {
    enum { EPOCHS = 2400 };
    write_xy(4);
    bf_context *ctx = new_ctx();
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4,"
                                 "\"shuffle\":true,\"seed\":1}",
                            bf_sp("x.npy"), bf_sp("y.npy"));
    int count[256] = {0};
    for (int e = 0; e < EPOCHS; e++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        ck_assert_int_eq(b.epoch, e);
        int code = 0, seen = 0;
        for (int r = 0; r < 4; r++) {
            code = code * 4 + (int)b.sample[r];
            seen |= 1 << b.sample[r];
        }
        ck_assert_int_eq(seen, 15);
        count[code]++;
    }
    double chi2 = 0, expect = EPOCHS / 24.0;
    int orders = 0;
    for (int c = 0; c < 256; c++)
        if (count[c]) {
            orders++;
            chi2 += (count[c] - expect) * (count[c] - expect) / expect;
        }
    chi2 += (24 - orders) * expect; /* orders never seen */
    ck_assert_int_eq(orders, 24);
    ck_assert_msg(chi2 < 70, "chi-square %g over the 24 orders", chi2);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(npz_members) {
    enum { N = 7 };
    double x[N * 6];
    int64_t y[N];
    for (int i = 0; i < N; i++) {
        y[i] = i;
        for (int k = 0; k < 6; k++) x[i * 6 + k] = i * 100 + k;
    }
    const int64_t xd[3] = {N, 3, 2};
    static unsigned char xb[1024], yb[512];
    size_t xn = npy_bytes(xb, sizeof(xb), "<f8", 3, xd, x, sizeof(x));
    size_t yn = npy_bytes(yb, sizeof(yb), "<i8", 1, xd, y, sizeof(y));
    const member both[2] = {{"x.npy", xb, xn}, {"y.npy", yb, yn}};
    write_zip("xy.npz", both, 2, false);
    write_zip("x_only.npz", both, 1, false);
    write_zip("packed.npz", both, 2, true);

    bf_context *ctx = new_ctx();
    /* The archive's dtypes (float64, int64), then converted by dtype and dtype2. */
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"key\":\"x\",\"file2\":\"%s\","
                                 "\"key2\":\"y\",\"batch_size\":5}",
                            bf_sp("xy.npz"), bf_sp("xy.npz"));
    batch b = step_batch(s, BF_DTYPE_F64, BF_DTYPE_I64);
    expect_rows(&b, 0, 5, 0, 0);
    b = step_batch(s, BF_DTYPE_F64, BF_DTYPE_I64);
    expect_rows(&b, 5, 2, 0, 1);
    bf_session_free(s);
    s = dataset(ctx, "{\"file\":\"%s\",\"key\":\"x\",\"file2\":\"%s\",\"key2\":\"y\","
                     "\"batch_size\":5,\"dtype\":\"float32\",\"dtype2\":\"int32\"}",
                bf_sp("xy.npz"), bf_sp("xy.npz"));
    b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    expect_rows(&b, 0, 5, 0, 0);
    bf_session_free(s);
    /* A lone array needs no key; file2 may be another kind of file (.npy). */
    write_npy("y.npy", "<i8", 1, xd, y, sizeof(y));
    s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":7}", bf_sp("x_only.npz"),
                bf_sp("y.npy"));
    b = step_batch(s, BF_DTYPE_F64, BF_DTYPE_I64);
    expect_rows(&b, 0, 7, 0, 0);
    bf_session_free(s);

    /* Key problems name the key attribute; a compressed archive names the file. */
    bf_error e = {0};
    char attrs[1024];
    snprintf(attrs, sizeof(attrs), "{\"file\":\"%s\",\"key\":\"z\"}", bf_sp("xy.npz"));
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.block_id, "data");
    ck_assert_str_eq(e.attr, "key");
    ck_assert_ptr_nonnull(strstr(e.message, "\"z\""));
    ck_assert_ptr_nonnull(strstr(e.message, "\"x\", \"y\""));
    snprintf(attrs, sizeof(attrs), "{\"file\":\"%s\"}", bf_sp("xy.npz"));
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_EATTR);
    ck_assert_str_eq(e.attr, "key");
    ck_assert_ptr_nonnull(strstr(e.message, "2 arrays"));
    snprintf(attrs, sizeof(attrs), "{\"file\":\"%s\",\"file2\":\"%s\",\"key2\":\"w\"}",
             bf_sp("xy.npz"), bf_sp("xy.npz"));
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_EATTR); /* file's key first */
    ck_assert_str_eq(e.attr, "key");
    snprintf(attrs, sizeof(attrs),
             "{\"file\":\"%s\",\"key\":\"x\",\"file2\":\"%s\",\"key2\":\"w\"}", bf_sp("xy.npz"),
             bf_sp("xy.npz"));
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_ENOTFOUND);
    ck_assert_str_eq(e.attr, "key2");
    snprintf(attrs, sizeof(attrs), "{\"file\":\"%s\",\"key\":\"x\"}", bf_sp("packed.npz"));
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_EUNSUPPORTED);
    ck_assert_str_eq(e.block_id, "data");
    ck_assert_str_eq(e.attr, "file");
    ck_assert_ptr_nonnull(strstr(e.message, "compress"));
    bf_context_free(ctx);
}
END_TEST

START_TEST(idx_files) {
    enum { N = 5 };
    unsigned char img[N * 6], lab[N];
    for (int i = 0; i < N; i++) {
        lab[i] = (unsigned char)(9 - i);
        for (int k = 0; k < 6; k++) /* up to 255 */
            img[i * 6 + k] = (unsigned char)BF_MIN_INT(i * 51 + k * 40, 255);
    }
    const uint32_t d[3] = {N, 3, 2};
    write_idx("images-idx3-ubyte", 0x08, 3, d, img, sizeof(img));
    write_idx("labels-idx1-ubyte", 0x08, 1, d, lab, sizeof(lab));
    bf_context *ctx = new_ctx();
    const char *const fetches[2] = {"data:batch", "data:batch2"};
    bf_step_options o;
    bf_step_options_init(&o);
    o.fetches = fetches;
    o.n_fetches = 2;
    for (int pass = 0; pass < 2; pass++) {
        /* Default dtypes: images float32, labels int32; then float64 and int64. */
        bf_session *s = dataset(ctx, pass ? "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":3,"
                                            "\"dtype\":\"float64\",\"dtype2\":\"int64\"}"
                                          : "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":3}",
                                bf_sp("images-idx3-ubyte"), bf_sp("labels-idx1-ubyte"));
        for (int k = 0; k < 2; k++) {
            bf_error e = {0};
            ck_assert_int_eq(bf_session_step(s, 1, &o, NULL, &e), BF_OK);
            const bf_tensor *x = bf_session_output(s, "data", "batch");
            const bf_tensor *y = bf_session_output(s, "data", "batch2");
            ck_assert_int_eq(bf_tensor_dtype(x), pass ? BF_DTYPE_F64 : BF_DTYPE_F32);
            ck_assert_int_eq(bf_tensor_dtype(y), pass ? BF_DTYPE_I64 : BF_DTYPE_I32);
            int64_t rows = k ? 2 : 3;
            ck_assert_int_eq(bf_tensor_dims(x)[0], rows);
            ck_assert_int_eq(bf_tensor_dims(y)[0], rows);
            for (int64_t r = 0; r < rows; r++) {
                int64_t i = k * 3 + r;
                ck_assert_double_eq(elem(y, r), 9 - i);
                for (int q = 0; q < 6; q++) /* raw bytes, 255 included: not scaled */
                    ck_assert_double_eq(elem(x, r * 6 + q), img[i * 6 + q]);
            }
        }
        bf_session_free(s);
    }
    ck_assert_int_eq(img[N * 6 - 1], 255);
    bf_context_free(ctx);
}
END_TEST

START_TEST(run_reset_and_no_second_file) {
    write_xy(10);
    bf_context *ctx = new_ctx();
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4}",
                            bf_sp("x.npy"), bf_sp("y.npy"));
    /* A plain run yields the cursor's batch and does not advance. */
    const char *const f[1] = {"data:batch2"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    bf_error e = {0};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
        ck_assert_double_eq(elem(bf_session_output(s, "data", "batch2"), 0), 0);
        expect_cursor(s, 0, 0);
    }
    bf_session_free(s);
    s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4}", bf_sp("x.npy"),
                bf_sp("y.npy"));
    batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    expect_rows(&b, 8, 2, 0, 2);
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK); /* the cursor's batch: [0, 4) */
    ck_assert_double_eq(elem(bf_session_output(s, "data", "batch2"), 3), 3);
    expect_cursor(s, 1, 0);
    /* The dims seen before running are the batch's own. */
    bf_port_shape p;
    ck_assert_int_eq(bf_session_port_shape(s, "data", "batch", 1, &p, &e), BF_OK);
    ck_assert_int_eq(p.dtype, BF_DTYPE_F32);
    ck_assert_int_eq(p.rank, 3);
    ck_assert_int_eq(p.dims[0], 4);
    ck_assert_int_eq(bf_session_reset(s, &e), BF_OK);
    expect_cursor(s, 0, 0);
    b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    expect_rows(&b, 0, 4, 0, 0);
    bf_session_free(s);

    /* Without file2, batch2 is an empty [0] tensor of dtype2 (int32 by default). */
    s = dataset(ctx, "{\"file\":\"%s\",\"batch_size\":4}", bf_sp("x.npy"));
    const char *const f2[2] = {"data:batch", "data:batch2"};
    o.fetches = f2;
    o.n_fetches = 2;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    const bf_tensor *x = bf_session_output(s, "data", "batch");
    const bf_tensor *y = bf_session_output(s, "data", "batch2");
    ck_assert_int_eq(bf_tensor_dims(x)[0], 4);
    ck_assert_double_eq(elem(x, 6), 100);
    ck_assert_int_eq(bf_tensor_dtype(y), BF_DTYPE_I32);
    ck_assert_int_eq(bf_tensor_rank(y), 1);
    ck_assert_int_eq(bf_tensor_numel(y), 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/*
 * A step after a plain run: the run cached the cursor's batch, the step uses it and must then
 * advance (a dataset advances after every step that read its batch, run or reused).
 */
START_TEST(step_after_plain_run) {
    write_xy(10);
    bf_context *ctx = new_ctx();
    bf_session *s = dataset(ctx, "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":4}",
                            bf_sp("x.npy"), bf_sp("y.npy"));
    const char *const f[1] = {"data:batch2"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f;
    o.n_fetches = 1;
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    for (int k = 0; k < 3; k++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        expect_rows(&b, 4 * k, k == 2 ? 2 : 4, 0, k);
    }
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(cursor_save_and_load) {
    write_xy(11);
    bf_context *ctx = new_ctx();
    const char *fmt = "{\"file\":\"%s\",\"file2\":\"%s\",\"batch_size\":3,\"shuffle\":true,"
                      "\"seed\":9}";
    bf_session *s = dataset(ctx, fmt, bf_sp("x.npy"), bf_sp("y.npy"));
    for (int k = 0; k < 6; k++) step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32); /* into epoch 1 */
    expect_cursor(s, 1, 2);
    bf_error e = {0};
    char ckpt[512];
    snprintf(ckpt, sizeof(ckpt), "%s", bf_sp("ckpt.npz"));
    ck_assert_int_eq(bf_session_save_state(s, ckpt, &e), BF_OK);
    batch want[5];
    for (int k = 0; k < 5; k++) want[k] = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    bf_session_free(s);

    s = dataset(ctx, fmt, bf_sp("x.npy"), bf_sp("y.npy"));
    ck_assert_int_eq(bf_session_load_state(s, ckpt, &e), BF_OK);
    expect_cursor(s, 1, 2);
    for (int k = 0; k < 5; k++) {
        batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
        ck_assert_int_eq(b.epoch, want[k].epoch);
        ck_assert_int_eq(b.index, want[k].index);
        ck_assert_int_eq(b.rows, want[k].rows);
        for (int64_t r = 0; r < b.rows; r++) ck_assert_int_eq(b.sample[r], want[k].sample[r]);
    }

    /* Cursors that are not int64 [2] or out of range: refused, the cursor unchanged. */
    static const struct {
        bf_dtype dt;
        int64_t n, epoch, index;
        bf_status status;
    } bad[] = {{BF_DTYPE_F32, 2, 0, 0, BF_EDTYPE}, {BF_DTYPE_I32, 2, 0, 0, BF_EDTYPE},
               {BF_DTYPE_I64, 3, 0, 0, BF_ESHAPE}, {BF_DTYPE_I64, 2, 0, 4, BF_EINVAL},
               {BF_DTYPE_I64, 2, -1, 0, BF_EINVAL}, {BF_DTYPE_I64, 2, 0, -1, BF_EINVAL}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        bf_tensor *t = NULL;
        ck_assert_int_eq(bf_tensor_new(NULL, bad[k].dt, 1, &bad[k].n, &t, NULL), BF_OK);
        if (bad[k].dt == BF_DTYPE_I64) {
            ((int64_t *)bf_tensor_data(t))[0] = bad[k].epoch;
            ((int64_t *)bf_tensor_data(t))[1] = bad[k].index;
        }
        ck_assert_int_eq(bf_session_write_state(s, "data", t, &e), bad[k].status);
        ck_assert_str_eq(e.block_id, "data");
        bf_tensor_free(t);
        expect_cursor(s, 2, 3);
    }
    /* A good one: the last batch of epoch 7 (two samples), then epoch 8. */
    int64_t two = 2;
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_I64, 1, &two, &t, NULL), BF_OK);
    ((int64_t *)bf_tensor_data(t))[0] = 7;
    ((int64_t *)bf_tensor_data(t))[1] = 3;
    ck_assert_int_eq(bf_session_write_state(s, "data", t, &e), BF_OK);
    bf_tensor_free(t);
    batch b = step_batch(s, BF_DTYPE_F32, BF_DTYPE_I32);
    ck_assert_int_eq(b.epoch, 7);
    ck_assert_int_eq(b.rows, 2);
    expect_cursor(s, 8, 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- malformed files and attributes ---------------------------------------------------------- */

typedef struct bad_case {
    const char *what;
    void (*make)(void);   /* writes the files */
    const char *attrs;    /* %s: bad (the file), then x.npy, y.npy as the case needs */
    bf_status status;
    const char *code, *attr;
    const char *message;  /* a part of the message */
} bad_case;

static void mk_text(void) { bf_write_file(bf_sp("bad"), "hello, world\n"); }
static void mk_tiny(void) { bf_write_bytes(bf_sp("bad"), "\0\0", 2); }
static void mk_idx_truncated(void) {
    unsigned char b[50] = {0};
    const uint32_t d[3] = {10, 3, 2};
    write_idx("bad", 0x08, 3, d, b, sizeof(b)); /* 60 bytes claimed */
}
static void mk_idx_long(void) {
    unsigned char b[70] = {0};
    const uint32_t d[3] = {10, 3, 2};
    write_idx("bad", 0x08, 3, d, b, sizeof(b)); /* 10 bytes the dims do not describe */
}
static void mk_idx_huge(void) {
    unsigned char b[16] = {0};
    const uint32_t d[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    write_idx("bad", 0x08, 4, d, b, sizeof(b));
}
static void mk_idx_big(void) { /* 2^40 elements, the default limit, plus one row */
    unsigned char b[16] = {0};
    const uint32_t d[3] = {65537, 4096, 4096};
    write_idx("bad", 0x08, 3, d, b, sizeof(b));
}
static void mk_idx_float(void) {
    unsigned char b[8] = {0};
    const uint32_t d[1] = {2};
    write_idx("bad", 0x0D, 1, d, b, sizeof(b));
}
static void mk_idx_rank0(void) { write_idx("bad", 0x08, 0, NULL, (const unsigned char *)"x", 1); }
static void mk_idx_header_cut(void) {
    bf_write_bytes(bf_sp("bad"), "\0\0\x08\x03\0\0\0\x0a\0\0", 10); /* 2 of 3 dims */
}
static void mk_npy_truncated(void) {
    float x[12] = {0};
    const int64_t d[2] = {4, 3};
    size_t cap = 512;
    unsigned char *buf = malloc(cap);
    size_t n = npy_bytes(buf, cap, "<f4", 2, d, x, sizeof(x));
    bf_write_bytes(bf_sp("bad"), buf, n - 8);
    free(buf);
}
static void mk_npy_scalar(void) {
    float v = 1;
    write_npy("bad", "<f4", 0, NULL, &v, sizeof(v));
}
static void mk_npy_empty(void) {
    const int64_t d[2] = {0, 3};
    write_npy("bad", "<f4", 2, d, "", 0);
}
static void mk_npy_fraction(void) {
    float v[2] = {1, 2.5f};
    const int64_t d[1] = {2};
    write_npy("bad", "<f4", 1, d, v, sizeof(v));
}
static void mk_xy(void) {
    write_xy(10);
    int32_t y[9] = {0};
    const int64_t d[1] = {9};
    write_npy("bad", "<i4", 1, d, y, sizeof(y));
}
static void mk_none(void) { write_xy(10); }

static const bad_case bad_cases[] = {
    {"missing file", mk_none, "{\"file\":\"%s.nothing\"}", BF_EIO, "io_error", "file",
     "cannot open"},
    {"not a data file", mk_text, "{\"file\":\"%s\"}", BF_EPARSE, "bad_dataset", "file",
     "not a .npy, .npz or IDX file"},
    {"two bytes", mk_tiny, "{\"file\":\"%s\"}", BF_EPARSE, "bad_dataset", "file", "too short"},
    {"IDX truncated", mk_idx_truncated, "{\"file\":\"%s\"}", BF_EPARSE, "bad_idx", "file",
     "truncated"},
    {"IDX dims that lie", mk_idx_long, "{\"file\":\"%s\"}", BF_EPARSE, "bad_idx", "file",
     "do not describe the file"},
    {"IDX dims overflow", mk_idx_huge, "{\"file\":\"%s\"}", BF_ELIMIT, "too_large", "file",
     "more elements than the limit"},
    {"IDX dims above the limit", mk_idx_big, "{\"file\":\"%s\"}", BF_ELIMIT, "too_large", "file",
     "[65537, 4096, 4096]"},
    {"IDX float elements", mk_idx_float, "{\"file\":\"%s\"}", BF_EUNSUPPORTED, "bad_idx", "file",
     "0x0D (float32)"},
    {"IDX of no dims", mk_idx_rank0, "{\"file\":\"%s\"}", BF_EPARSE, "bad_idx", "file",
     "0 dimensions"},
    {"IDX header cut", mk_idx_header_cut, "{\"file\":\"%s\"}", BF_EPARSE, "bad_idx", "file",
     "header"},
    {"npy truncated", mk_npy_truncated, "{\"file\":\"%s\"}", BF_EPARSE, "bad_npy", "file",
     "needs 48"},
    {"npy scalar", mk_npy_scalar, "{\"file\":\"%s\"}", BF_ESHAPE, "shape_mismatch", "file",
     "scalar"},
    {"npy of no samples", mk_npy_empty, "{\"file\":\"%s\"}", BF_ESHAPE, "shape_mismatch", "file",
     "no samples"},
    {"fractions to int32", mk_npy_fraction, "{\"file\":\"%s\",\"dtype\":\"int32\"}", BF_EDTYPE,
     "dtype_mismatch", "dtype", "element 1 (2.5)"},
    {"key on a .npy", mk_xy, "{\"file\":\"%2$s\",\"key\":\"x\"}", BF_EATTR, "bad_attr", "key",
     "a .npy file"},
    {"key2 without file2", mk_xy, "{\"file\":\"%2$s\",\"key2\":\"x\"}", BF_EATTR, "bad_attr",
     "key2", "without file2"},
    {"batch_size 0", mk_xy, "{\"file\":\"%2$s\",\"batch_size\":0}", BF_EATTR, "bad_attr",
     "batch_size", "at least 1"},
    {"no full batch", mk_xy, "{\"file\":\"%2$s\",\"batch_size\":11,\"drop_remainder\":true}",
     BF_EATTR, "bad_attr", "batch_size", "no batch is left"},
    {"empty file name", mk_xy, "{\"file\":\"\"}", BF_EATTR, "bad_attr", "file", "empty"},
};

/*
 * Files of different lengths: a problem of the page that the check reports on file2 (a run
 * refuses it), not a failed edit, so that an editor can change both files one after the
 * other, as one batch of edits does here.
 */
START_TEST(lockstep_checked_and_swappable) {
    mk_xy(); /* x.npy and y.npy of 10 samples, bad: int32 [9] */
    float x9[9 * 6] = {0};
    write_npy("x9.npy", "<f4", 3, (const int64_t[3]){9, 3, 2}, x9, sizeof(x9));
    char attrs[2048], x[512], y[512], bad[512], xn[512];
    snprintf(x, sizeof(x), "%s", bf_sp("x.npy"));
    snprintf(y, sizeof(y), "%s", bf_sp("y.npy"));
    snprintf(bad, sizeof(bad), "%s", bf_sp("bad"));
    snprintf(xn, sizeof(xn), "%s", bf_sp("x9.npy"));
    snprintf(attrs, sizeof(attrs), "{\"file\":\"%s\",\"file2\":\"%s\"}", x, bad);
    bf_context *ctx = new_ctx();
    bf_session *s = NULL;
    bf_error e = {0};
    ck_assert_int_eq(try_dataset(ctx, attrs, &s, &e), BF_OK);
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_ESHAPE);
    ck_assert_str_eq(e.code, "shape_mismatch");
    ck_assert_str_eq(e.block_id, "data");
    ck_assert_str_eq(e.attr, "file2");
    ck_assert_ptr_nonnull(strstr(e.message, "file2 has 9 samples but file has 10"));
    const char *f[1] = {"data:batch2"};
    bf_run_options o;
    bf_run_options_init(&o);
    o.fetches = f, o.n_fetches = 1;
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_ESHAPE);
    char edits[4096];
    snprintf(edits, sizeof(edits), "[{\"op\":\"set_attr\",\"block\":\"data\",\"attr\":\"file2\","
             "\"value\":\"%s\"}]", y);
    ck_assert_int_eq(bf_session_apply_edits(s, edits, strlen(edits), NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    /* both files in one batch: after its first edit they are 9 and 10 samples for a moment */
    snprintf(edits, sizeof(edits),
             "[{\"op\":\"set_attr\",\"block\":\"data\",\"attr\":\"file\",\"value\":\"%s\"},"
             "{\"op\":\"set_attr\",\"block\":\"data\",\"attr\":\"file2\",\"value\":\"%s\"}]",
             xn, bad);
    ck_assert_msg(bf_session_apply_edits(s, edits, strlen(edits), NULL, &e) == BF_OK, "%s",
                  e.message);
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, &o, NULL, &e), BF_OK);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(malformed_files) {
    const bad_case *c = &bad_cases[_i];
    c->make();
    char path[512], x[512], attrs[2048];
    snprintf(path, sizeof(path), "%s", bf_sp("bad"));
    snprintf(x, sizeof(x), "%s", bf_sp("x.npy"));
    snprintf(attrs, sizeof(attrs), c->attrs, path, x);
    bf_context *ctx = new_ctx();
    bf_session *s = NULL;
    bf_error e = {0};
    ck_assert_msg(try_dataset(ctx, attrs, &s, &e) == c->status, "%s: status %s (%s)", c->what,
                  bf_status_name(e.status), e.message);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(e.code, c->code);
    ck_assert_str_eq(e.block_id, "data");
    ck_assert_str_eq(e.attr, c->attr);
    ck_assert_msg(strstr(e.message, c->message), "%s: message \"%s\" lacks \"%s\"", c->what,
                  e.message, c->message);
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("dataset");
    TCase *tc = tcase_create("batches");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, in_order_with_short_batch);
    tcase_add_test(tc, drop_remainder);
    tcase_add_test(tc, shuffle_per_epoch);
    tcase_add_test(tc, shuffle_is_uniform);
    tcase_add_test(tc, run_reset_and_no_second_file);
    tcase_add_test(tc, cursor_save_and_load);
    tcase_add_test(tc, step_after_plain_run);
    tcase_add_test(tc, lockstep_checked_and_swappable);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, npz_members);
    tcase_add_test(tc, idx_files);
    tcase_add_loop_test(tc, malformed_files, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
