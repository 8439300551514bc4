/*
 * test_hostile.c - blockflow against hostile and broken input, and under stress (issue 6).
 *
 * limits:  every resource limit fails fast, with bounded memory and an error that names the
 *          limit and how to raise it: a million blocks, JSON nested 100000 deep, a .npy
 *          header claiming 4 GiB, shapes whose product overflows 64 bits, a Const fill beyond
 *          max_tensor_elements or max_session_bytes; and a chain of blocks at the raised
 *          limit loads, checks and runs in linear time.
 * faults:  an allocator that fails the Nth allocation for N = 1, 2, ... (STYLE R14e) around
 *          load + session + check + run: each step returns BF_ENOMEM and nothing leaks; the
 *          CLI with an output folder it cannot create or a full disk exits 5 and leaves older
 *          results intact; Ctrl-C ends a long run promptly with exit 130.
 * threads: sessions of one page on many threads give identical results; hundreds of runs
 *          with cancellations from another thread stay clean (run this under TSan too).
 * numbers: NaN and Inf pass through as IEEE 754 says; half and bfloat16 overflow to Inf.
 *
 * Set BF_HOSTILE_BIG=1 to also run the million-block chain (about a minute and 3 GB).
 */
#include "bf_test.h"
#include "common.h"
#include "tensor.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bf_context *make_ctx(const bf_config *cfg) {
    bf_context *ctx = NULL;
    bf_error e;
    ck_assert_int_eq(bf_context_new(cfg, &ctx, &e), BF_OK);
    return ctx;
}

/* Load `json` and make a session; returns the first failing status (err filled). */
static bf_status open_page(bf_context *ctx, const char *json, bf_session **s, bf_error *err) {
    bf_page *page = NULL;
    *s = NULL;
    memset(err, 0, sizeof(*err));
    bf_status st = bf_page_load_string(ctx, json, strlen(json), "t.json", bf_scratch(), &page,
                                       NULL, err);
    if (st == BF_OK) st = bf_session_new(ctx, page, s, err);
    return st;
}

#define PAGE_HEAD "{\"format\": \"blockflow.page\", \"version\": 1, "

/* ---- limits ------------------------------------------------------------------------------- */

START_TEST(million_blocks_over_default_limit) {
    const int n = 1000000;
    size_t cap = (size_t)n * 3 + 128, k = 0;
    char *json = malloc(cap);
    k += (size_t)sprintf(json, PAGE_HEAD "\"blocks\": [");
    for (int i = 0; i < n; i++) {
        memcpy(json + k, i ? ",{}" : "{}", i ? 3 : 2);
        k += i ? 3 : 2;
    }
    k += (size_t)sprintf(json + k, "]}");
    bf_context *ctx = make_ctx(NULL);
    bf_page *page = (bf_page *)1;
    bf_error e;
    double t0 = now_s();
    ck_assert_int_eq(bf_page_load_string(ctx, json, k, "big.json", NULL, &page, NULL, &e),
                     BF_ELIMIT);
    ck_assert_ptr_null(page);
    ck_assert_str_eq(e.code, "too_many_blocks");
    ck_assert_ptr_nonnull(strstr(e.message, "1000000 blocks"));
    ck_assert_ptr_nonnull(strstr(e.message, "bf_config.max_blocks"));
    ck_assert_str_eq(e.pointer, "/blocks");
    ck_assert_double_lt(now_s() - t0, 20.0);
    bf_context_free(ctx);
    free(json);
}
END_TEST

/* A chain b0 = Const 1.5, b<i> = Identity(b<i-1>) of n blocks, with hex ids. */
static char *chain_page(int n, size_t *len) {
    size_t cap = (size_t)n * 64 + 256, k = 0;
    char *json = malloc(cap);
    ck_assert_ptr_nonnull(json);
    k += (size_t)sprintf(json, PAGE_HEAD "\"blocks\": [{\"id\": \"b0\", \"type\": \"Const\", "
                               "\"attrs\": {\"value\": 1.5}}");
    for (int i = 1; i < n; i++)
        k += (size_t)sprintf(json + k, ",{\"id\":\"b%x\",\"type\":\"Identity\","
                                       "\"inputs\":{\"input\":\"b%x\"}}", i, i - 1);
    k += (size_t)sprintf(json + k, "], \"outputs\": [\"b%x\"]}", n - 1);
    *len = k;
    return json;
}

static void chain(int n, bool run) {
    size_t len;
    char *json = chain_page(n, &len);
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_blocks = n;
    cfg.max_page_bytes = (uint64_t)256 << 20;
    cfg.threads = 1;
    bf_context *ctx = make_ctx(&cfg);
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_error e;
    double t0 = now_s();
    ck_assert_int_eq(bf_page_load_string(ctx, json, len, "chain.json", NULL, &page, NULL, &e),
                     BF_OK);
    free(json);
    ck_assert_int_eq(bf_page_block_count(page), n);
    ck_assert_int_eq(bf_session_new(ctx, page, &s, &e), BF_OK);
    ck_assert_int_eq(bf_session_check(s, NULL, &e), BF_OK);
    double t1 = now_s();
    if (run) {
        ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
        char id[16];
        snprintf(id, sizeof(id), "b%x", n - 1);
        const bf_tensor *t = bf_session_output(s, id, NULL);
        ck_assert_ptr_nonnull(t);
        ck_assert_double_eq(bf_tensor_get_f64(t, 0), 1.5);
    }
    fprintf(stderr, "chain of %d blocks: load+new+check %.2f s, run %.2f s\n", n, t1 - t0,
            now_s() - t1);
    bf_session_free(s);
    bf_context_free(ctx);
}

START_TEST(chain_100k_blocks_checks) { chain(100000, false); }
END_TEST

START_TEST(chain_10k_blocks_runs) { chain(10000, true); }
END_TEST

START_TEST(chain_million_blocks_runs) {
    if (!getenv("BF_HOSTILE_BIG")) return; /* about a minute and 3 GB: opt in */
    chain(1000000, true);
}
END_TEST

START_TEST(json_nested_100k_deep) {
    const int n = 100000;
    char *json = malloc(2 * (size_t)n + 1);
    memset(json, '[', (size_t)n);
    memset(json + n, ']', (size_t)n);
    bf_context *ctx = make_ctx(NULL);
    bf_page *page = NULL;
    bf_error e;
    ck_assert_int_eq(bf_page_load_string(ctx, json, 2 * (size_t)n, "deep.json", NULL, &page,
                                         NULL, &e),
                     BF_ELIMIT);
    ck_assert_str_eq(e.code, "too_deep");
    ck_assert_ptr_nonnull(strstr(e.message, "bf_config.max_json_depth"));
    ck_assert_int_eq(e.line, 1);
    ck_assert_int_eq(e.column, 65); /* the 65th '[' is one level too many */
    /* Inside a page, within the brackets of an attribute, and in a string (not counted). */
    const char *ok = PAGE_HEAD "\"name\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[[[[[[[[[[[[[[[[[\", \"blocks\": [{\"id\": \"c\", "
                     "\"type\": \"Const\", \"attrs\": {\"value\": [[[[1]]]]}}], \"outputs\": "
                     "[\"c\"]}";
    ck_assert_int_eq(bf_page_load_string(ctx, ok, strlen(ok), "ok.json", NULL, &page, NULL, &e),
                     BF_OK);
    bf_page_free(page);
    bf_context_free(ctx);
    free(json);
}
END_TEST

START_TEST(npy_header_claims_4gib) {
    char path[128];
    snprintf(path, sizeof(path), "%s/big.npy", bf_scratch());
    static const char v2[] = "\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4', ";
    bf_write_bytes(path, v2, sizeof(v2) - 1);
    bf_tensor *t = (bf_tensor *)1;
    bf_error e;
    ck_assert_int_eq(bf_tensor_load_npy(NULL, path, &t, &e), BF_ELIMIT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(e.code, "too_large");
    ck_assert_ptr_nonnull(strstr(e.message, "4294967295"));
    /* The same file named by a page's Const: the error names the block and attribute. */
    bf_context *ctx = make_ctx(NULL);
    bf_session *s;
    const char *page = PAGE_HEAD "\"blocks\": [{\"id\": \"w\", \"type\": \"Const\", \"attrs\": "
                                 "{\"file\": \"big.npy\"}}], \"outputs\": [\"w\"]}";
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_ELIMIT);
    ck_assert_str_eq(e.block_id, "w");
    ck_assert_str_eq(e.attr, "file");
    bf_context_free(ctx);
}
END_TEST

/* Pages whose shapes overflow 64 bits: (page, status, code, block, step 0 load/new, 1 check) */
static const struct {
    const char *blocks;
    bf_status st;
    const char *code;
    int at_check;
} overflow_cases[] = {
    {"{\"id\": \"x\", \"type\": \"Placeholder\", \"attrs\": {\"dtype\": \"float32\", "
     "\"shape\": [4503599627370496, 4503599627370496]}}",
     BF_ELIMIT, "too_large", 1},
    {"{\"id\": \"x\", \"type\": \"Placeholder\", "
     "\"attrs\": \"dtype_ = float32; shape_ = {9223372036854775807, 2};\"}",
     BF_ELIMIT, "too_large", 1},
    {"{\"id\": \"x\", \"type\": \"Const\", \"attrs\": {\"shape\": [4503599627370496, "
     "4503599627370496], \"value\": 1}}",
     BF_ELIMIT, "too_large", 0},
    {"{\"id\": \"x\", \"type\": \"RandomNormal\", \"attrs\": {\"shape\": [4294967296, "
     "4294967296, 4294967296]}}",
     BF_ELIMIT, "too_large", 1},
    {"{\"id\": \"x\", \"type\": \"RandomUniform\", \"attrs\": {\"shape\": [1048576, 1048576, "
     "2]}}",
     BF_ELIMIT, "too_large", 1},
};

START_TEST(shape_overflows_64_bits) {
    char page[1024];
    snprintf(page, sizeof(page), PAGE_HEAD "\"blocks\": [%s], \"outputs\": [\"x\"]}",
             overflow_cases[_i].blocks);
    bf_context *ctx = make_ctx(NULL);
    bf_session *s;
    bf_error e;
    bf_status st = open_page(ctx, page, &s, &e);
    if (overflow_cases[_i].at_check) {
        ck_assert_int_eq(st, BF_OK);
        st = bf_session_check(s, NULL, &e);
    }
    ck_assert_int_eq(st, overflow_cases[_i].st);
    ck_assert_str_eq(e.code, overflow_cases[_i].code);
    ck_assert_str_eq(e.block_id, "x");
    ck_assert(strstr(e.message, "64 bits") || strstr(e.message, "max_tensor_elements"));
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(const_fill_beyond_limits) {
    bf_session *s;
    bf_error e;
    /* 2^41 elements from one number: above the default 2^40, refused before any allocation. */
    bf_context *ctx = make_ctx(NULL);
    const char *fill = PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", \"attrs\": "
                                 "{\"shape\": [2097152, 1048576], \"value\": 1}}], "
                                 "\"outputs\": [\"c\"]}";
    ck_assert_int_eq(open_page(ctx, fill, &s, &e), BF_ELIMIT);
    ck_assert_str_eq(e.block_id, "c");
    ck_assert_ptr_nonnull(strstr(e.message, "max_tensor_elements"));
    bf_context_free(ctx);
    /* A configured element limit. */
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 1000;
    ctx = make_ctx(&cfg);
    const char *small = PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", \"attrs\": "
                                  "{\"shape\": [100, 100], \"value\": 1}}], "
                                  "\"outputs\": [\"c\"]}";
    ck_assert_int_eq(open_page(ctx, small, &s, &e), BF_ELIMIT);
    ck_assert_ptr_nonnull(strstr(e.message, "above the limit of 1000"));
    bf_context_free(ctx);
    /* Within the element limit but above the session's memory: charged like any tensor. */
    bf_config_init(&cfg);
    cfg.max_session_bytes = 1 << 20;
    ctx = make_ctx(&cfg);
    const char *mem = PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", \"attrs\": "
                                "{\"shape\": [1024, 1024], \"value\": 1}}], "
                                "\"outputs\": [\"c\"]}";
    ck_assert_int_eq(open_page(ctx, mem, &s, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "memory_limit");
    ck_assert_ptr_nonnull(strstr(e.message, "max_session_bytes"));
    bf_context_free(ctx);
}
END_TEST

/*
 * Shape tensors that ask for 2^31 and more elements, passed through a chain of Identity
 * blocks into the convolution family: refused at check time, naming the conv block, before
 * anything is allocated (the values are known at check time through the chain).
 */
static const struct {
    const char *sizes;  /* the int32/int64-sized shape Const */
    const char *block;  /* the conv block and its wiring */
} huge_sizes[] = {
    {"[1, 46341, 46341, 1]",
     "{\"id\": \"g\", \"type\": \"Conv2DBackpropInput\", \"inputs\": {\"input_sizes\": \"s3\", "
     "\"filter\": \"w\", \"out_backprop\": \"dy\"}, \"attrs\": {\"strides\": [1, 1, 1, 1], "
     "\"padding\": \"SAME\"}}"},
    {"[46341, 46341, 1, 1]",
     "{\"id\": \"g\", \"type\": \"Conv2DBackpropFilter\", \"inputs\": {\"input\": \"x\", "
     "\"filter_sizes\": \"s3\", \"out_backprop\": \"dy\"}, \"attrs\": {\"strides\": [1, 1, 1, 1], "
     "\"padding\": \"SAME\"}}"},
    {"[1, 65535, 65535, 1]",
     "{\"id\": \"g\", \"type\": \"DepthwiseConv2dNativeBackpropInput\", \"inputs\": "
     "{\"input_sizes\": \"s3\", \"filter\": \"w\", \"out_backprop\": \"dy\"}, \"attrs\": "
     "{\"strides\": [1, 1, 1, 1], \"padding\": \"SAME\"}}"},
};

START_TEST(conv_sizes_beyond_limits_through_identity_chain) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = (uint64_t)1 << 30; /* 2^31 elements are above it */
    bf_context *ctx = make_ctx(&cfg);
    char page[2048];
    snprintf(page, sizeof(page),
             PAGE_HEAD "\"blocks\": ["
                       "{\"id\": \"s0\", \"type\": \"Const\", \"attrs\": {\"dtype\": \"int32\", "
                       "\"value\": %s}},"
                       "{\"id\": \"s1\", \"type\": \"Identity\", \"inputs\": {\"input\": \"s0\"}},"
                       "{\"id\": \"s2\", \"type\": \"Identity\", \"inputs\": {\"input\": \"s1\"}},"
                       "{\"id\": \"s3\", \"type\": \"Identity\", \"inputs\": {\"input\": \"s2\"}},"
                       "{\"id\": \"x\", \"type\": \"Placeholder\", \"attrs\": {\"shape\": [1, -1, -1, 1]}},"
                       "{\"id\": \"w\", \"type\": \"Placeholder\", \"attrs\": {\"shape\": [3, 3, 1, 1]}},"
                       "{\"id\": \"dy\", \"type\": \"Placeholder\"},"
                       "%s], \"outputs\": [\"g\"]}",
             huge_sizes[_i].sizes, huge_sizes[_i].block);
    bf_session *s = NULL;
    bf_error e;
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_OK);
    double t0 = now_s();
    bf_status st = bf_session_check(s, NULL, &e);
    ck_assert_msg(st == BF_ELIMIT, "status %s: %s", bf_status_name(st), e.message);
    ck_assert_str_eq(e.block_id, "g");
    ck_assert_ptr_nonnull(strstr(e.message, "max_tensor_elements"));
    ck_assert_double_lt(now_s() - t0, 0.5);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(conv_sizes_that_overflow) {
    /* input_sizes [1,5,5,999999999999] does not even fit int32: a clear dtype error at load,
     * and one that fits int32 but overflows when multiplied is refused by the shape check. */
    bf_context *ctx = make_ctx(NULL);
    bf_session *s = NULL;
    bf_error e;
    const char *too_big = PAGE_HEAD "\"blocks\": [{\"id\": \"s\", \"type\": \"Const\", "
                                    "\"attrs\": {\"dtype\": \"int32\", \"value\": [1, 5, 5, "
                                    "999999999999]}}], \"outputs\": [\"s\"]}";
    ck_assert_int_eq(open_page(ctx, too_big, &s, &e), BF_EDTYPE);
    ck_assert_str_eq(e.block_id, "s");
    char page[1024];
    snprintf(page, sizeof(page),
             PAGE_HEAD "\"blocks\": ["
                       "{\"id\": \"s\", \"type\": \"Const\", \"attrs\": {\"dtype\": \"int32\", "
                       "\"value\": [2147483647, 2147483647, 2147483647, 2147483647]}},"
                       "{\"id\": \"i\", \"type\": \"Identity\", \"inputs\": {\"input\": \"s\"}},"
                       "{\"id\": \"w\", \"type\": \"Placeholder\", \"attrs\": {\"shape\": [1, 1, 2147483647, 1]}},"
                       "{\"id\": \"dy\", \"type\": \"Placeholder\"},"
                       "{\"id\": \"g\", \"type\": \"Conv2DBackpropInput\", \"inputs\": "
                       "{\"input_sizes\": \"i\", \"filter\": \"w\", \"out_backprop\": \"dy\"}, "
                       "\"attrs\": {\"strides\": [1, 1, 1, 1], \"padding\": \"VALID\"}}"
                       "], \"outputs\": [\"g\"]}");
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_OK);
    bf_status st = bf_session_check(s, NULL, &e);
    ck_assert_msg(st == BF_ELIMIT || st == BF_ESHAPE, "status %s: %s", bf_status_name(st),
                  e.message);
    ck_assert_str_eq(e.block_id, "g");
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- faults: allocation failures ------------------------------------------------------------ */

static long fail_at, n_allocs, live;

static void *fail_malloc(size_t size, void *user) {
    (void)user;
    if (++n_allocs == fail_at) return NULL;
    void *p = malloc(size);
    if (p) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return p;
}

static void *fail_realloc(void *ptr, size_t size, void *user) {
    (void)user;
    if (++n_allocs == fail_at) return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr) __atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
    return p;
}

static void counting_free(void *ptr, void *user) {
    (void)user;
    __atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
    free(ptr);
}

START_TEST(out_of_memory_loop) {
    bf_replace_allocator(fail_malloc, fail_realloc, counting_free, NULL);
    const char *page = PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", \"attrs\": "
                       "{\"value\": [[1, 2], [3, 4]]}}, {\"id\": \"i\", \"type\": \"Identity\", "
                       "\"inputs\": {\"input\": \"c\"}}, {\"id\": \"r\", \"type\": "
                       "\"RandomNormal\", \"attrs\": \"shape_ = {2,2}; seed_ = 3;\"}, "
                       "{\"id\": \"h\", \"type\": \"Const\", \"attrs\": {\"dtype\": "
                       "\"float16\", \"shape\": [3], \"value\": 70000}}], "
                       "\"outputs\": [\"i\", \"r\", \"h\"]}";
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    int n;
    for (n = 1; n < 20000; n++) {
        fail_at = n;
        n_allocs = 0;
        bf_error e = {0};
        bf_context *ctx = NULL;
        bf_page *pg = NULL;
        bf_session *s = NULL;
        bf_diags *d = bf_diags_new();
        bf_status st = d ? BF_OK : BF_ENOMEM;
        if (st == BF_OK) st = bf_context_new(&cfg, &ctx, &e);
        if (st == BF_OK)
            st = bf_page_load_string(ctx, page, strlen(page), "oom.json", NULL, &pg, d, &e);
        if (st == BF_OK) st = bf_session_new(ctx, pg, &s, &e);
        if (st == BF_OK) st = bf_session_check(s, d, &e);
        if (st == BF_OK) st = bf_session_run(s, NULL, d, &e);
        /* the live page: a batch (tried on a copy first), the canonical text, the JSON check */
        static const char edits[] =
            "[{\"op\":\"add_block\",\"id\":\"k\",\"type\":\"Identity\",\"ui\":{\"x\":1}},"
            "{\"op\":\"connect\",\"block\":\"k\",\"port\":\"input\",\"source\":\"i\"},"
            "{\"op\":\"rename_block\",\"id\":\"c\",\"new_id\":\"c2\"},"
            "{\"op\":\"set_attr\",\"block\":\"c2\",\"attr\":\"value\",\"value\":[[5,6],[7,8]]}]";
        if (st == BF_OK) st = bf_session_apply_edits(s, edits, strlen(edits), d, &e);
        char *text = NULL, *check = NULL;
        if (st == BF_OK) st = bf_page_to_json(bf_session_page(s), &text, &e);
        if (st == BF_OK) st = bf_session_check_json(s, &check, &e);
        bf_string_free(text);
        bf_string_free(check);
        if (st == BF_OK) st = bf_session_run(s, NULL, d, &e);
        if (st != BF_OK) {
            if (st != BF_ENOMEM)
                ck_abort_msg("allocation %d failed: got %s (%s: %s), wanted ENOMEM", n,
                             bf_status_name(st), e.code, e.message);
        } else {
            ck_assert_double_eq(bf_tensor_get_f64(bf_session_output(s, "i", NULL), 3), 8);
            ck_assert(isinf(bf_tensor_get_f64(bf_session_output(s, "h", NULL), 0)));
        }
        bf_session_free(s);
        bf_diags_free(d);
        bf_context_free(ctx);
        ck_assert_msg(live == 0, "allocation %d failed: %ld blocks leaked", n, live);
        if (st == BF_OK && n_allocs < n) break; /* nothing failed: every step was covered */
    }
    ck_assert_int_lt(n, 20000);
    fprintf(stderr, "out_of_memory_loop: %d allocations covered\n", n - 1);
    bf_replace_allocator(NULL, NULL, NULL, NULL);
}
END_TEST

/* ---- faults: the CLI --------------------------------------------------------------------- */

/*
 * Run the blockflow program with args (NULL-terminated), stdout and stderr to files in the
 * scratch folder. `fsize` > 0 sets RLIMIT_FSIZE (with SIGXFSZ ignored, so writes fail with
 * EFBIG as on a full disk). `sigint_after` > 0 sends SIGINT after that many seconds and
 * stores in *elapsed how long the program took to exit after it. Returns the exit status.
 */
static int run_cli(const char *const *args, long fsize, double sigint_after, double *elapsed) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char out[128];
        snprintf(out, sizeof(out), "%s/cli.log", bf_scratch());
        if (!freopen(out, "w", stdout) || !freopen(out, "a", stderr)) _exit(120);
        if (fsize > 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        char *argv[32];
        int i = 0;
        argv[i++] = (char *)bf_test_binary();
        for (; args[i - 1] && i < 31; i++) argv[i] = (char *)args[i - 1];
        argv[i] = NULL;
        execv(argv[0], argv);
        _exit(121);
    }
    int status;
    if (sigint_after > 0) {
        usleep((useconds_t)(sigint_after * 1e6));
        kill(pid, SIGINT);
        double t0 = now_s();
        waitpid(pid, &status, 0);
        *elapsed = now_s() - t0;
    } else {
        waitpid(pid, &status, 0);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void write_page(const char *name, const char *json, char *path, size_t size) {
    snprintf(path, size, "%s/%s", bf_scratch(), name);
    bf_write_bytes(path, json, strlen(json));
}

START_TEST(cli_output_folder_cannot_be_made) {
    char page[256], file[256], out[300];
    write_page("p.json", PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", "
                         "\"attrs\": {\"value\": [1, 2]}}], \"outputs\": [\"c\"]}",
               page, sizeof(page));
    snprintf(file, sizeof(file), "%s/plain", bf_scratch());
    bf_write_bytes(file, "x", 1);
    snprintf(out, sizeof(out), "%s/sub", file); /* its parent is a regular file */
    const char *args[] = {"run", page, "--out", out, NULL};
    ck_assert_int_eq(run_cli(args, 0, 0, NULL), 5);
}
END_TEST

START_TEST(cli_disk_full_keeps_older_results) {
    char page[256], dir[256], old[300];
    write_page("p.json", PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", "
                         "\"attrs\": {\"value\": [1, 2]}}, {\"id\": \"r\", \"type\": "
                         "\"RandomNormal\", \"attrs\": {\"shape\": [100000]}}], "
                         "\"outputs\": [\"c\", \"r\"]}",
               page, sizeof(page));
    snprintf(dir, sizeof(dir), "%s/out", bf_scratch());
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    const char *older[] = {"c.npy", "r.npy"};
    for (int i = 0; i < 2; i++) {
        snprintf(old, sizeof(old), "%s/%s", dir, older[i]);
        bf_write_bytes(old, "OLD RESULT", 10);
    }
    const char *args[] = {"run", page, "--out", dir, NULL};
    ck_assert_int_eq(run_cli(args, 64 * 1024, 0, NULL), 5); /* r.npy needs 400 KB */
    for (int i = 0; i < 2; i++) {
        size_t n;
        snprintf(old, sizeof(old), "%s/%s", dir, older[i]);
        char *data = bf_read_file(old, &n);
        ck_assert_ptr_nonnull(data);
        ck_assert_uint_eq(n, 10);
        ck_assert_int_eq(memcmp(data, "OLD RESULT", 10), 0);
        free(data);
    }
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *de; (de = readdir(d));) entries += de->d_name[0] != '.' ||
                                                         strlen(de->d_name) > 2;
    closedir(d);
    ck_assert_int_eq(entries, 2); /* no staging or temporary file left behind */
}
END_TEST

START_TEST(cli_ctrl_c_exits_130_promptly) {
    char page[256];
    char json[8192];
    size_t k = (size_t)sprintf(json, PAGE_HEAD "\"blocks\": [");
    for (int i = 0; i < 40; i++)
        k += (size_t)sprintf(json + k, "%s{\"id\": \"r%d\", \"type\": \"RandomNormal\", "
                                       "\"attrs\": {\"shape\": [8388608], \"seed\": %d}}",
                             i ? "," : "", i, i);
    k += (size_t)sprintf(json + k, "], \"outputs\": [");
    for (int i = 0; i < 40; i++) k += (size_t)sprintf(json + k, "%s\"r%d\"", i ? "," : "", i);
    sprintf(json + k, "]}");
    write_page("big.json", json, page, sizeof(page));
    const char *args[] = {"run", page, "--no-save", "--threads", "1", NULL};
    double after = 0;
    ck_assert_int_eq(run_cli(args, 0, 1.0, &after), 130);
    ck_assert_double_lt(after, 3.0);
}
END_TEST

/* ---- threads ---------------------------------------------------------------------------- */

static const char *const thread_page =
    PAGE_HEAD "\"blocks\": [{\"id\": \"r\", \"type\": \"RandomNormal\", \"attrs\": {\"shape\": "
    "[64, 64], \"seed\": 3}}, {\"id\": \"u\", \"type\": \"RandomUniform\", \"attrs\": "
    "{\"shape\": [30000], \"dtype\": \"float64\", \"seed\": 9}}, {\"id\": \"i\", \"type\": "
    "\"Identity\", \"inputs\": {\"input\": \"r\"}}, {\"id\": \"c\", \"type\": \"Const\", "
    "\"attrs\": {\"dtype\": \"bfloat16\", \"value\": [1, 2, 3]}}], "
    "\"outputs\": [\"i\", \"u\", \"c\"]}";

typedef struct worker {
    bf_context *ctx;
    int runs;
    const bf_tensor *ref[3];
    int mismatches, failures;
} worker;

static const char *const outs3[] = {"i", "u", "c"};

static void *run_same_page(void *arg) {
    worker *w = arg;
    for (int r = 0; r < w->runs; r++) {
        bf_session *s;
        bf_error e;
        if (open_page(w->ctx, thread_page, &s, &e) || bf_session_run(s, NULL, NULL, &e)) {
            w->failures++;
        } else {
            for (int k = 0; k < 3; k++) {
                const bf_tensor *t = bf_session_output(s, outs3[k], NULL);
                if (!t || bf_tensor_nbytes(t) != bf_tensor_nbytes(w->ref[k]) ||
                    memcmp(bf_tensor_cdata(t), bf_tensor_cdata(w->ref[k]), bf_tensor_nbytes(t)))
                    w->mismatches++;
            }
        }
        bf_session_free(s);
    }
    return NULL;
}

START_TEST(parallel_sessions_identical) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 4;
    bf_context *ctx = make_ctx(&cfg);
    bf_session *ref;
    bf_error e;
    ck_assert_int_eq(open_page(ctx, thread_page, &ref, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(ref, NULL, NULL, &e), BF_OK);
    enum { N = 8 };
    worker w[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        w[i] = (worker){.ctx = ctx, .runs = 6};
        for (int k = 0; k < 3; k++) w[i].ref[k] = bf_session_output(ref, outs3[k], NULL);
        ck_assert_int_eq(pthread_create(&th[i], NULL, run_same_page, &w[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
        ck_assert_int_eq(w[i].mismatches, 0);
    }
    bf_session_free(ref);
    bf_context_free(ctx);
}
END_TEST

typedef struct stress {
    bf_session *s;
    atomic_int stop;
    int ok, cancelled, other;
    const bf_tensor *ref; /* "i" of an uncancelled run with seed 3 */
    int bad;
} stress;

static void *canceller(void *arg) {
    stress *st = arg;
    unsigned x = 12345;
    while (!atomic_load(&st->stop)) {
        bf_session_cancel(st->s);
        x = x * 1103515245 + 12345;
        usleep(x % 4000);
    }
    return NULL;
}

START_TEST(runs_with_cancellations_from_another_thread) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = make_ctx(&cfg);
    bf_session *ref;
    bf_error e;
    ck_assert_int_eq(open_page(ctx, thread_page, &ref, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(ref, NULL, NULL, &e), BF_OK);
    stress st = {.ref = bf_session_output(ref, "i", NULL)};
    atomic_init(&st.stop, 0);
    ck_assert_int_eq(open_page(ctx, thread_page, &st.s, &e), BF_OK);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, canceller, &st), 0);
    for (int r = 0; r < 300; r++) {
        /* Alternate the seed so that every run recomputes r, i and u. */
        ck_assert_int_eq(bf_session_set_attr(st.s, "r", "seed", r % 2 ? "4" : "3", &e), BF_OK);
        ck_assert_int_eq(bf_session_set_attr(st.s, "u", "seed", r % 2 ? "5" : "9", &e), BF_OK);
        bf_status rs = bf_session_run(st.s, NULL, NULL, &e);
        if (rs == BF_OK) {
            st.ok++;
            const bf_tensor *t = bf_session_output(st.s, "i", NULL);
            if (r % 2 == 0 && memcmp(bf_tensor_cdata(t), bf_tensor_cdata(st.ref),
                                     bf_tensor_nbytes(t)))
                st.bad++;
        } else if (rs == BF_ECANCELED) {
            st.cancelled++;
            ck_assert_str_eq(e.code, "cancelled");
        } else {
            st.other++;
        }
    }
    atomic_store(&st.stop, 1);
    pthread_join(th, NULL);
    /* After the storm a run completes and gives the reference result. */
    ck_assert_int_eq(bf_session_set_attr(st.s, "r", "seed", "3", &e), BF_OK);
    ck_assert_int_eq(bf_session_run(st.s, NULL, NULL, &e), BF_OK);
    ck_assert_int_eq(memcmp(bf_tensor_cdata(bf_session_output(st.s, "i", NULL)),
                            bf_tensor_cdata(st.ref), bf_tensor_nbytes(st.ref)),
                     0);
    fprintf(stderr, "stress: %d ok, %d cancelled, %d other\n", st.ok, st.cancelled, st.other);
    ck_assert_int_eq(st.other, 0);
    ck_assert_int_eq(st.bad, 0);
    ck_assert_int_gt(st.ok + st.cancelled, 0);
    bf_session_free(st.s);
    bf_session_free(ref);
    bf_context_free(ctx);
}
END_TEST

/* A server shares one context between its run workers, so the first GPU question (placing a
 * block, describing the devices) may come from several threads at once. Under ThreadSanitizer
 * (CI step 3) this caught the lazy probe writing the device list unlocked. */
typedef struct first_question {
    bf_context *ctx;
    pthread_barrier_t *go;
    const char *devices;
    int has_gpu, failures;
} first_question;

static void *ask_first(void *arg) {
    first_question *q = arg;
    bf_session *s;
    bf_error e;
    pthread_barrier_wait(q->go);
    if (open_page(q->ctx, thread_page, &s, &e) || bf_session_run(s, NULL, NULL, &e))
        q->failures++;
    bf_session_free(s);
    q->has_gpu = bf_context_has_gpu(q->ctx);
    q->devices = bf_context_devices(q->ctx);
    return NULL;
}

START_TEST(first_gpu_question_from_many_threads) {
    enum { N = 6 };
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.threads = 2;
    bf_context *ctx = make_ctx(&cfg); /* fresh: nothing has probed the devices yet */
    pthread_barrier_t go;
    ck_assert_int_eq(pthread_barrier_init(&go, NULL, N), 0);
    first_question q[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        q[i] = (first_question){.ctx = ctx, .go = &go};
        ck_assert_int_eq(pthread_create(&th[i], NULL, ask_first, &q[i]), 0);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(q[i].failures, 0);
        ck_assert_int_eq(q[i].has_gpu, q[0].has_gpu);
        ck_assert_str_eq(q[i].devices, q[0].devices);
    }
    ck_assert_msg(strncmp(q[0].devices, "cpu: 2 threads", 14) == 0, "devices: %s",
                  q[0].devices);
    pthread_barrier_destroy(&go);
    bf_context_free(ctx);
}
END_TEST

/* ---- numbers ----------------------------------------------------------------------------- */

static const bf_dtype float_dtypes[] = {BF_DTYPE_F16, BF_DTYPE_BF16, BF_DTYPE_F32,
                                        BF_DTYPE_F64};

START_TEST(nan_and_inf_pass_through) {
    bf_dtype dt = float_dtypes[_i];
    const double vals[] = {NAN, INFINITY, -INFINITY, -0.0, 1.0};
    int64_t dims[1] = {5};
    bf_tensor *src = NULL, *loaded = NULL;
    bf_error e;
    ck_assert_int_eq(bf_tensor_new(NULL, dt, 1, dims, &src, &e), BF_OK);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(bf_tensor_set_f64(src, i, vals[i], &e), BF_OK);
    char path[128];
    snprintf(path, sizeof(path), "%s/x.npy", bf_scratch());
    ck_assert_int_eq(bf_tensor_save_npy(src, path, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_load_npy(NULL, path, &loaded, &e), BF_OK);
    bf_dtype fed = bf_tensor_dtype(loaded); /* bfloat16 comes back as float32 */
    char page[512];
    snprintf(page, sizeof(page), PAGE_HEAD "\"blocks\": [{\"id\": \"x\", \"type\": "
             "\"Placeholder\", \"attrs\": {\"dtype\": \"%s\", \"shape\": [-1]}}, {\"id\": "
             "\"y\", \"type\": \"Identity\", \"inputs\": {\"input\": \"x\"}}], "
             "\"outputs\": [\"y\"]}", bf_dtype_name(fed));
    bf_context *ctx = make_ctx(NULL);
    bf_session *s;
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_OK);
    ck_assert_int_eq(bf_session_feed(s, "x", loaded, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    const bf_tensor *y = bf_session_output(s, "y", NULL);
    ck_assert(isnan(bf_tensor_get_f64(y, 0)));
    ck_assert(isinf(bf_tensor_get_f64(y, 1)) && bf_tensor_get_f64(y, 1) > 0);
    ck_assert(isinf(bf_tensor_get_f64(y, 2)) && bf_tensor_get_f64(y, 2) < 0);
    ck_assert(bf_tensor_get_f64(y, 3) == 0 && signbit(bf_tensor_get_f64(y, 3)));
    ck_assert_double_eq(bf_tensor_get_f64(y, 4), 1.0);
    bf_session_free(s);
    bf_context_free(ctx);
    bf_tensor_free(src);
    bf_tensor_free(loaded);
}
END_TEST

START_TEST(half_and_bfloat16_overflow_to_inf) {
    const char *page = PAGE_HEAD "\"blocks\": ["
        "{\"id\": \"h\", \"type\": \"Const\", \"attrs\": {\"dtype\": \"float16\", "
        "\"value\": [70000, -70000, 65504, 65520, 65519]}},"
        "{\"id\": \"b\", \"type\": \"Const\", \"attrs\": {\"dtype\": \"bfloat16\", "
        "\"value\": [1e39, -1e39, 3e38]}},"
        "{\"id\": \"f\", \"type\": \"Const\", \"attrs\": {\"dtype\": \"float32\", "
        "\"value\": [1e39, 1e-50]}}], \"outputs\": [\"h\", \"b\", \"f\"]}";
    bf_context *ctx = make_ctx(NULL);
    bf_session *s;
    bf_error e;
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_OK);
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    const bf_tensor *h = bf_session_output(s, "h", NULL), *b = bf_session_output(s, "b", NULL),
                    *f = bf_session_output(s, "f", NULL);
    ck_assert(isinf(bf_tensor_get_f64(h, 0)) && bf_tensor_get_f64(h, 0) > 0);
    ck_assert(isinf(bf_tensor_get_f64(h, 1)) && bf_tensor_get_f64(h, 1) < 0);
    ck_assert_double_eq(bf_tensor_get_f64(h, 2), 65504);
    ck_assert(isinf(bf_tensor_get_f64(h, 3)));           /* rounds to even: up, to Inf */
    ck_assert_double_eq(bf_tensor_get_f64(h, 4), 65504); /* below the halfway point */
    ck_assert(isinf(bf_tensor_get_f64(b, 0)) && bf_tensor_get_f64(b, 0) > 0);
    ck_assert(isinf(bf_tensor_get_f64(b, 1)) && bf_tensor_get_f64(b, 1) < 0);
    ck_assert(isfinite(bf_tensor_get_f64(b, 2)));
    ck_assert(isinf(bf_tensor_get_f64(f, 0)));
    ck_assert_double_eq(bf_tensor_get_f64(f, 1), 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

/* ---- regressions found by the fuzzers (fuzz/) ---------------------------------------------- */

/* fuzz_page: an output (or input) naming a block of unknown type dereferenced its NULL
 * descriptor in bf_page_resolve. */
START_TEST(fuzz_output_names_block_of_unknown_type) {
    const char *pages[] = {
        PAGE_HEAD "\"blocks\": [{\"id\": \"a\", \"type\": \"Conv9D\"}], \"outputs\": [\"a\"]}",
        PAGE_HEAD "\"blocks\": [{\"id\": \"a\", \"type\": \"Conv9D\"}, {\"id\": \"b\", "
                  "\"type\": \"Identity\", \"inputs\": {\"input\": \"a\"}}], "
                  "\"outputs\": [\"a:output\"]}",
    };
    bf_context *ctx = make_ctx(NULL);
    for (int i = 0; i < BF_COUNT(pages); i++) {
        bf_session *s;
        bf_error e;
        ck_assert_int_eq(open_page(ctx, pages[i], &s, &e), BF_ESCHEMA);
        ck_assert_str_eq(e.code, "unknown_block_type");
    }
    bf_context_free(ctx);
}
END_TEST

/* fuzz_enuspace: a Const whose value count does not fit its shape read the element count
 * of the tensor it had just freed, for the error message. */
START_TEST(fuzz_const_value_count_mismatch) {
    bf_context *ctx = make_ctx(NULL);
    const char *page = PAGE_HEAD "\"blocks\": [{\"id\": \"c\", \"type\": \"Const\", "
                                 "\"attrs\": {\"shape\": [0], \"value\": [true, 1024, 10]}}], "
                                 "\"outputs\": [\"c\"]}";
    bf_session *s;
    bf_error e;
    ck_assert_int_eq(open_page(ctx, page, &s, &e), BF_ESHAPE);
    ck_assert_str_eq(e.attr, "value");
    ck_assert_ptr_nonnull(strstr(e.message, "value has 3 numbers but the shape holds 0"));
    bf_context_free(ctx);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, million_blocks_over_default_limit);
    tcase_add_test(tc, chain_100k_blocks_checks);
    tcase_add_test(tc, chain_10k_blocks_runs);
    tcase_add_test(tc, chain_million_blocks_runs);
    tcase_add_test(tc, json_nested_100k_deep);
    tcase_add_test(tc, npy_header_claims_4gib);
    tcase_add_loop_test(tc, shape_overflows_64_bits, 0, BF_COUNT(overflow_cases));
    tcase_add_test(tc, const_fill_beyond_limits);
    tcase_add_loop_test(tc, conv_sizes_beyond_limits_through_identity_chain, 0,
                        (int)(sizeof(huge_sizes) / sizeof(huge_sizes[0])));
    tcase_add_test(tc, conv_sizes_that_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("faults");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, out_of_memory_loop);
    tcase_add_test(tc, cli_output_folder_cannot_be_made);
    tcase_add_test(tc, cli_disk_full_keeps_older_results);
    tcase_add_test(tc, cli_ctrl_c_exits_130_promptly);
    tcase_add_test(tc, fuzz_output_names_block_of_unknown_type);
    tcase_add_test(tc, fuzz_const_value_count_mismatch);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, parallel_sessions_identical);
    tcase_add_test(tc, runs_with_cancellations_from_another_thread);
    tcase_add_test(tc, first_gpu_question_from_many_threads);
    suite_add_tcase(s, tc);

    tc = tcase_create("numbers");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_loop_test(tc, nan_and_inf_pass_through, 0, BF_COUNT(float_dtypes));
    tcase_add_test(tc, half_and_bfloat16_overflow_to_inf);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
