/*
 * test_npy.c - .npy reading and writing (runtime/npy.c): byte-exact images of what numpy
 * writes (numpy is not needed to run this), round trips of every dtype at ranks 0, 1, 4 and 8,
 * one case per way a header can be malformed or hostile (each asserting status and code), the
 * limits that must hold before allocation, and the atomicity of saving: a failed save creates
 * nothing, leaves an older file untouched and never leaves a "<path>.tmp.*" file behind.
 */
#include "bf_test.h"
#include "common.h"
#include "half.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- byte-exact images ------------------------------------------------------------------ */

/* np.save(np.array([1, 2, 3], '<f4')) by numpy >= 1.23: version 1.0, 20 spaces of growth room
 * (21 digits minus the 1 of "3"), then padding so that the data starts at byte 128. */
static const char npy_v1_f32_3[] =
    "\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00"
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }                    "
    "                                        \n" /* 40 spaces of padding */
    "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40";

/* Version 2.0 (u32 header length), int64 [[1, -2], [3, -2^40]], 16-byte alignment as numpy
 * < 1.14 wrote it. */
static const char npy_v2_i64_2x2[] =
    "\x93\x4e\x55\x4d\x50\x59\x02\x00\x44\x00\x00\x00"
    "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }"
    "        \n" /* 8 spaces of padding */
    "\x01\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\xff"
    "\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff";

/* Version 1.0, the float64 scalar 3.5: shape (). */
static const char npy_v1_f64_scalar[] =
    "\x93\x4e\x55\x4d\x50\x59\x01\x00\x46\x00"
    "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"
    "              \n" /* 14 spaces of padding */
    "\x00\x00\x00\x00\x00\x00\x0c\x40";

/* Version 3.0, keys reordered, double quotes, no trailing comma: bfloat16 bits [1.0, -3.0]
 * as |V2 (how ml_dtypes arrays are saved). */
static const char npy_v3_bf16_2[] =
    "\x93\x4e\x55\x4d\x50\x59\x03\x00\x74\x00\x00\x00"
    "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"|V2\"}"
    "                                                            \n" /* 60 spaces */
    "\x80\x3f\x40\xc0";

/* Version 1.0 written by Python 2 (dims as "1L"): float16 [[1, -2, 65504]]. */
static const char npy_v1_f16_py2[] =
    "\x93\x4e\x55\x4d\x50\x59\x01\x00\x46\x00"
    "{'descr': '<f2', 'fortran_order': False, 'shape': (1L, 3L), }"
    "        \n" /* 8 spaces of padding */
    "\x00\x3c\x00\xc0\xff\x7b";

/* ---- scratch folder and file helpers -------------------------------------------------------- */

static char scratch[64];

static void scratch_setup(void) {
    strcpy(scratch, "/tmp/bf_test_npy.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
}

/* Remove the scratch folder and everything in it (two levels are enough here). */
static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        chmod(p, 0700);
        if (unlink(p)) rm_tree(p);
    }
    closedir(d);
    rmdir(dir);
}

static void scratch_teardown(void) {
    chmod(scratch, 0700);
    rm_tree(scratch);
}

static const char *spath(const char *name) {
    static char p[256];
    snprintf(p, sizeof(p), "%s/%s", scratch, name);
    return p;
}

static void write_file(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Read a whole small file into buf; returns its size. */
static size_t read_file(const char *path, void *buf, size_t size) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* Number of entries in `dir` whose name contains ".tmp.". */
static int count_tmp(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* Number of entries in `dir` besides . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/*
 * Write a .npy made of: magic, version major.0, the header length (u16 for 1, u32 otherwise)
 * of `header` + '\n', the header, '\n', and `data_len` bytes of 0x11.
 */
static void write_npy(const char *path, int major, const char *header, size_t data_len) {
    size_t hl = strlen(header) + 1, lb = major == 1 ? 2 : 4;
    size_t n = 8 + lb + hl + data_len;
    unsigned char *buf = malloc(n);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < lb; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
    memcpy(buf + 8 + lb, header, hl - 1);
    buf[8 + lb + hl - 1] = '\n';
    memset(buf + 8 + lb + hl, 0x11, data_len);
    write_file(path, buf, n);
    free(buf);
}

/* ---- reading the images ---------------------------------------------------------------- */

static bf_tensor *load_image(const char *img, size_t n) {
    const char *p = spath("img.npy");
    write_file(p, img, n);
    bf_tensor *t = NULL;
    bf_error e = {0};
    bf_status st = bf_tensor_load_npy(NULL, p, &t, &e);
    ck_assert_msg(st == BF_OK, "load failed: %s", e.message);
    return t;
}
#define LOAD_IMAGE(a) load_image(a, sizeof(a) - 1)

START_TEST(reads_numpy_images) {
    bf_tensor *t = LOAD_IMAGE(npy_v1_f32_3);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F32);
    ck_assert_int_eq(bf_tensor_rank(t), 1);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 3);
    for (int i = 0; i < 3; i++) ck_assert_double_eq(bf_tensor_get_f64(t, i), i + 1);
    bf_tensor_free(t);

    t = LOAD_IMAGE(npy_v2_i64_2x2);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_I64);
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 2);
    ck_assert_int_eq(bf_tensor_dims(t)[1], 2);
    const int64_t *iv = bf_tensor_cdata(t);
    ck_assert_int_eq(iv[0], 1);
    ck_assert_int_eq(iv[1], -2);
    ck_assert_int_eq(iv[2], 3);
    ck_assert_int_eq(iv[3], -(INT64_C(1) << 40));
    bf_tensor_free(t);

    t = LOAD_IMAGE(npy_v1_f64_scalar);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F64);
    ck_assert_int_eq(bf_tensor_rank(t), 0);
    ck_assert_int_eq(bf_tensor_numel(t), 1);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), 3.5);
    bf_tensor_free(t);

    t = LOAD_IMAGE(npy_v3_bf16_2);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_BF16);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 2);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), 1.0);
    ck_assert_double_eq(bf_tensor_get_f64(t, 1), -3.0);
    bf_tensor_free(t);

    t = LOAD_IMAGE(npy_v1_f16_py2);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F16);
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    ck_assert_int_eq(bf_tensor_dims(t)[1], 3);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), 1.0);
    ck_assert_double_eq(bf_tensor_get_f64(t, 1), -2.0);
    ck_assert_double_eq(bf_tensor_get_f64(t, 2), 65504.0);
    bf_tensor_free(t);
}
END_TEST

/* Saving [1, 2, 3] as float32 writes exactly what numpy writes. */
START_TEST(writes_what_numpy_writes) {
    int64_t d[1] = {3};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &t, NULL), BF_OK);
    float *v = bf_tensor_data(t);
    for (int i = 0; i < 3; i++) v[i] = (float)(i + 1);
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_save_npy(t, spath("a.npy"), &e), BF_OK);
    char buf[512];
    size_t n = read_file(spath("a.npy"), buf, sizeof(buf));
    ck_assert_uint_eq(n, sizeof(npy_v1_f32_3) - 1);
    ck_assert(!memcmp(buf, npy_v1_f32_3, n));
    ck_assert_int_eq(count_tmp(scratch), 0);
    bf_tensor_free(t);
}
END_TEST

/* ---- round trips ---------------------------------------------------------------------------- */

static const struct {
    int rank;
    int64_t dims[BF_MAX_RANK];
} rt_shapes[] = {
    {0, {0}},
    {1, {7}},
    {4, {2, 3, 1, 5}},
    {8, {2, 1, 3, 1, 2, 1, 1, 2}},
    {2, {3, 0}}, /* empty */
};

/* Loop index i: dtype (i / shapes) + 1, shape i % shapes. */
START_TEST(round_trip) {
    int ns = BF_COUNT(rt_shapes);
    bf_dtype dt = (bf_dtype)(_i / ns + 1);
    int rank = rt_shapes[_i % ns].rank;
    const int64_t *dims = rt_shapes[_i % ns].dims;
    bf_tensor *t = NULL, *u = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(NULL, dt, rank, dims, &t, &e), BF_OK);
    bf_rng r = {.s = (uint64_t)_i + 1};
    int64_t n = bf_tensor_numel(t);
    void *p = bf_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        double x = bf_rng_nonzero(&r) * 100;
        switch (dt) {
        case BF_DTYPE_F16: ((uint16_t *)p)[i] = bf_f32_to_f16((float)x); break;
        case BF_DTYPE_BF16: ((uint16_t *)p)[i] = bf_f32_to_bf16((float)x); break;
        case BF_DTYPE_F32: ((float *)p)[i] = (float)x; break;
        case BF_DTYPE_F64: ((double *)p)[i] = x; break;
        case BF_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)bf_rng_int(&r, INT32_MIN, INT32_MAX); break;
        case BF_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)bf_rng_next(&r); break;
        default: ck_abort();
        }
    }
    const char *path = spath("rt.npy");
    ck_assert_msg(bf_tensor_save_npy(t, path, &e) == BF_OK, "%s", e.message);
    ck_assert_int_eq(count_tmp(scratch), 0);

    /* The data starts at a multiple of 64 and the header ends with '\n'. */
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    size_t out_bytes = (size_t)n * (dt == BF_DTYPE_BF16 ? 4 : bf_dtype_size(dt));
    size_t hdr = (size_t)sb.st_size - out_bytes;
    ck_assert_uint_eq(hdr % 64, 0);
    char head[512];
    ck_assert_uint_ge(read_file(path, head, sizeof(head)), BF_MIN(hdr, sizeof(head)));
    ck_assert_int_eq(head[hdr - 1], '\n');

    ck_assert_msg(bf_tensor_load_npy(NULL, path, &u, &e) == BF_OK, "%s", e.message);
    ck_assert_int_eq(bf_tensor_dtype(u), dt == BF_DTYPE_BF16 ? BF_DTYPE_F32 : dt);
    ck_assert_int_eq(bf_tensor_rank(u), rank);
    for (int i = 0; i < rank; i++) ck_assert_int_eq(bf_tensor_dims(u)[i], dims[i]);
    ck_assert_int_eq(bf_tensor_numel(u), n);
    if (dt == BF_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i++) /* exact widening */
            ck_assert_double_eq(bf_tensor_get_f64(u, i), bf_tensor_get_f64(t, i));
    } else {
        ck_assert_uint_eq(bf_tensor_nbytes(u), bf_tensor_nbytes(t));
        ck_assert(!memcmp(bf_tensor_cdata(u), bf_tensor_cdata(t), bf_tensor_nbytes(t)));
    }
    bf_tensor_free(t);
    bf_tensor_free(u);
}
END_TEST

/* ---- malformed and hostile files ------------------------------------------------------------- */

#define F32_2X3 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

static const struct {
    const char *what;
    int major;
    const char *header;
    size_t data_len;
    bf_status status;
    const char *code;
} bad_cases[] = {
    {"unsupported version 4.0", 4, F32_2X3, 24, BF_EUNSUPPORTED, "unsupported_npy"},
    {"header is not a dict", 1, "['descr', '<f4']", 0, BF_EPARSE, "bad_npy"},
    {"truncated dict", 1, "{'descr': '<f4', 'fortran_order': False, ", 0, BF_EPARSE, "bad_npy"},
    {"missing descr", 1, "{'fortran_order': False, 'shape': (2, 3), }", 24, BF_EPARSE, "bad_npy"},
    {"missing fortran_order", 1, "{'descr': '<f4', 'shape': (2, 3), }", 24, BF_EPARSE, "bad_npy"},
    {"missing shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 24, BF_EPARSE, "bad_npy"},
    {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24,
     BF_EPARSE, "bad_npy"},
    {"duplicate key", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
     "'shape': (2, 3)}", 24, BF_EPARSE, "bad_npy"},
    {"text after the dict", 1, F32_2X3 " x", 24, BF_EPARSE, "bad_npy"},
    {"fortran_order not a bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", 24,
     BF_EPARSE, "bad_npy"},
    {"one-element shape without comma", 1, "{'descr': '<f4', 'fortran_order': False, "
     "'shape': (6)}", 24, BF_EPARSE, "bad_npy"},
    {"shape not a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", 24,
     BF_EPARSE, "bad_npy"},
    {"big-endian >f4", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24,
     BF_EUNSUPPORTED, "unsupported_npy"},
    {"complex <c8", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24,
     BF_EUNSUPPORTED, "unsupported_npy"},
    {"unicode <U1", 1, "{'descr': '<U1', 'fortran_order': False, 'shape': (6,), }", 24,
     BF_EUNSUPPORTED, "unsupported_npy"},
    {"native-order =f4", 1, "{'descr': '=f4', 'fortran_order': False, 'shape': (6,), }", 24,
     BF_EUNSUPPORTED, "unsupported_npy"},
    {"structured dtype", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }",
     24, BF_EUNSUPPORTED, "unsupported_npy"},
    {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
     BF_EUNSUPPORTED, "unsupported_npy"},
    {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24,
     BF_EPARSE, "bad_npy"},
    {"dim above 2^63", 1, "{'descr': '<f4', 'fortran_order': False, "
     "'shape': (99999999999999999999,), }", 24, BF_ELIMIT, "too_large"},
    {"product overflows 64 bits", 1, "{'descr': '<f4', 'fortran_order': False, "
     "'shape': (1099511627776, 1073741824, 1048576), }", 24, BF_ELIMIT, "too_large"},
    {"above the default element limit", 2, "{'descr': '<f4', 'fortran_order': False, "
     "'shape': (1099511627777,), }", 24, BF_ELIMIT, "too_large"},
    {"rank 9", 1, "{'descr': '<f4', 'fortran_order': False, "
     "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4, BF_ELIMIT, "too_large"},
    {"data shorter than the shape", 1, F32_2X3, 23, BF_EPARSE, "bad_npy"},
    {"data longer than the shape", 1, F32_2X3, 25, BF_EPARSE, "bad_npy"},
    {"no data", 3, F32_2X3, 0, BF_EPARSE, "bad_npy"},
};

START_TEST(rejects_bad_header) {
    const char *p = spath("bad.npy");
    write_npy(p, bad_cases[_i].major, bad_cases[_i].header, bad_cases[_i].data_len);
    bf_tensor *t = (bf_tensor *)1;
    bf_error e = {0};
    bf_status st = bf_tensor_load_npy(NULL, p, &t, &e);
    ck_assert_msg(st == bad_cases[_i].status, "%s: got %s (%s)", bad_cases[_i].what,
                  bf_status_name(st), e.message);
    ck_assert_str_eq(e.code, bad_cases[_i].code);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(e.message, p)); /* the message names the file */
}
END_TEST

START_TEST(size_mismatch_names_both_sizes) {
    const char *p = spath("short.npy");
    write_npy(p, 1, F32_2X3, 20);
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_msg(strstr(e.message, "20 bytes") && strstr(e.message, "needs 24"), "%s",
                  e.message);
}
END_TEST

/* Raw prefixes that go wrong before the header: magic, version, header length. */
START_TEST(rejects_bad_prefix) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    const char *p = spath("bad.npy");

    write_file(p, "\x93NUMPX\x01\x00\x10\x00{}", 12);
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_npy");

    write_file(p, "\x93NU", 3); /* shorter than the magic */
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_npy");

    write_file(p, "\x93NUMPY\x01\x01\x10\x00", 10); /* version 1.1 */
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "unsupported_npy");

    write_file(p, "\x93NUMPY\x02\x00\x10", 9); /* ends inside the header length */
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_npy");

    /* A header claiming 1000 bytes in a 60-byte file: truncated header. */
    char buf[60];
    memset(buf, ' ', sizeof(buf));
    memcpy(buf, "\x93NUMPY\x01\x00\xe8\x03{'descr'", 17);
    write_file(p, buf, sizeof(buf));
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_str_eq(e.code, "bad_npy");
    ck_assert_ptr_null(t);
}
END_TEST

/* Allocation hooks that record the largest request. */
typedef struct alloc_probe {
    size_t largest;
    int fail_at; /* fail the fail_at-th allocation (1-based); 0: never */
    int count;
} alloc_probe;

static void *probe_malloc(size_t n, void *user) {
    alloc_probe *a = user;
    if (n > a->largest) a->largest = n;
    if (a->fail_at && ++a->count == a->fail_at) return NULL;
    return malloc(n);
}
static void *probe_realloc(void *p, size_t n, void *user) {
    alloc_probe *a = user;
    if (n > a->largest) a->largest = n;
    if (a->fail_at && ++a->count == a->fail_at) return NULL;
    return realloc(p, n);
}
static void probe_free(void *p, void *user) { free(p); }

/* A version 2.0 header length of 4 GiB - 1 fails at once, without allocating it. */
START_TEST(huge_header_claim_fails_fast) {
    alloc_probe a = {0};
    bf_replace_allocator(probe_malloc, probe_realloc, probe_free, &a);
    const char *p = spath("huge.npy");
    write_file(p, "\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4'", 27);
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "too_large");
    ck_assert_uint_lt(a.largest, 1 << 16);
    /* The same with a 1.0 header of 65535 bytes claimed, within the limit: truncated. */
    write_file(p, "\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'", 25);
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, &e), BF_EPARSE);
    ck_assert_uint_lt(a.largest, 1 << 16);
    bf_replace_allocator(NULL, NULL, NULL, NULL);
}
END_TEST

/* A shape over the context's max_tensor_elements fails before allocating; at the limit loads. */
START_TEST(context_element_limit) {
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 6;
    cfg.threads = 1;
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(&cfg, &ctx, NULL), BF_OK);
    bf_tensor *t = NULL;
    bf_error e = {0};
    const char *p = spath("lim.npy");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", 28);
    ck_assert_int_eq(bf_tensor_load_npy(ctx, p, &t, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "too_large");
    ck_assert_ptr_nonnull(strstr(e.message, "max_tensor_elements"));
    ck_assert_ptr_null(t);
    write_npy(p, 1, F32_2X3, 24);
    ck_assert_int_eq(bf_tensor_load_npy(ctx, p, &t, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_numel(t), 6);
    bf_tensor_free(t);
    bf_context_free(ctx);
}
END_TEST

/* Fortran order is accepted where it is the same bytes as C order (rank <= 1). */
START_TEST(fortran_order_of_a_vector_is_c_order) {
    const char *p = spath("f.npy");
    write_npy(p, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (3,), }", 12);
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_load_npy(NULL, p, &t, NULL), BF_OK);
    ck_assert_int_eq(bf_tensor_numel(t), 3);
    bf_tensor_free(t);
}
END_TEST

START_TEST(io_errors) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_load_npy(NULL, spath("none.npy"), &t, &e), BF_EIO);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_ptr_nonnull(strstr(e.message, "none.npy"));
    ck_assert_int_eq(bf_tensor_load_npy(NULL, scratch, &t, &e), BF_EIO); /* a folder */
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_int_eq(bf_tensor_load_npy(NULL, NULL, &t, &e), BF_EINVAL);
}
END_TEST

/* Fail the Nth allocation for N = 1, 2, ... until loading and saving succeed: every failure
 * is a clean BF_ENOMEM (ASan checks that nothing leaks). */
START_TEST(out_of_memory_loop) {
    write_file(spath("img.npy"), npy_v2_i64_2x2, sizeof(npy_v2_i64_2x2) - 1);
    alloc_probe a = {0};
    bf_replace_allocator(probe_malloc, probe_realloc, probe_free, &a);
    int n;
    for (n = 1; n < 100; n++) {
        a.fail_at = n;
        a.count = 0;
        bf_tensor *t = NULL;
        bf_error e = {0};
        bf_status st = bf_tensor_load_npy(NULL, spath("img.npy"), &t, &e);
        if (st == BF_OK) {
            a.fail_at = 0;
            ck_assert_int_eq(bf_tensor_numel(t), 4);
            /* now the save, with the same loop */
            int m;
            for (m = 1; m < 100; m++) {
                a.fail_at = m;
                a.count = 0;
                st = bf_tensor_save_npy(t, spath("out.npy"), &e);
                if (st == BF_OK) break;
                ck_assert_int_eq(st, BF_ENOMEM);
                ck_assert_int_eq(count_tmp(scratch), 0);
                ck_assert_int_eq(access(spath("out.npy"), F_OK), -1);
            }
            ck_assert_int_lt(m, 100);
            bf_tensor_free(t);
            break;
        }
        ck_assert_int_eq(st, BF_ENOMEM);
        ck_assert_str_eq(e.code, "out_of_memory");
        ck_assert_ptr_null(t);
    }
    ck_assert_int_lt(n, 100);
    bf_replace_allocator(NULL, NULL, NULL, NULL);
}
END_TEST

/* ---- atomic saving --------------------------------------------------------------------- */

static bf_tensor *small_tensor(float v) {
    int64_t d[2] = {2, 2};
    bf_tensor *t = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 2, d, &t, NULL), BF_OK);
    float *p = bf_tensor_data(t);
    for (int i = 0; i < 4; i++) p[i] = v;
    return t;
}

/* The file at `path` is a .npy whose first element is v. */
static void assert_npy_holds(const char *path, double v) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(bf_tensor_load_npy(NULL, path, &t, &e) == BF_OK, "%s", e.message);
    ck_assert_double_eq(bf_tensor_get_f64(t, 0), v);
    bf_tensor_free(t);
}

START_TEST(save_into_missing_folder) {
    bf_tensor *t = small_tensor(1);
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_save_npy(t, spath("nope/a.npy"), &e), BF_EIO);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_ptr_nonnull(strstr(e.message, strerror(ENOENT)));
    ck_assert_int_eq(count_entries(scratch), 0);
    bf_tensor_free(t);
}
END_TEST

/* A parent that is a regular file (ENOTDIR) fails cleanly, and so does every unwritable
 * folder; the permission case only runs when not root, since root ignores the mode bits. */
START_TEST(save_into_unwritable_folder) {
    bf_tensor *t = small_tensor(2);
    bf_error e = {0};
    write_file(spath("file"), "x", 1);
    ck_assert_int_eq(bf_tensor_save_npy(t, spath("file/a.npy"), &e), BF_EIO);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_ptr_nonnull(strstr(e.message, strerror(ENOTDIR)));
    ck_assert_int_eq(count_entries(scratch), 1);

    if (geteuid() != 0) {
        bf_tensor *old = small_tensor(7);
        ck_assert_int_eq(bf_tensor_save_npy(old, spath("a.npy"), &e), BF_OK);
        ck_assert_int_eq(chmod(scratch, 0555), 0);
        ck_assert_int_eq(bf_tensor_save_npy(t, spath("a.npy"), &e), BF_EIO);
        ck_assert_ptr_nonnull(strstr(e.message, strerror(EACCES)));
        ck_assert_int_eq(chmod(scratch, 0700), 0);
        assert_npy_holds(spath("a.npy"), 7);
        ck_assert_int_eq(count_tmp(scratch), 0);
        bf_tensor_free(old);
    }
    bf_tensor_free(t);
}
END_TEST

/* A full disk, simulated with RLIMIT_FSIZE (which binds root too): the write fails with
 * EFBIG, the older file is untouched and the temporary file is gone. */
START_TEST(save_on_full_disk_keeps_old_file) {
    bf_tensor *old = small_tensor(7);
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_save_npy(old, spath("a.npy"), &e), BF_OK);
    int64_t d[1] = {1 << 18}; /* 1 MiB */
    bf_tensor *big = NULL;
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &big, NULL), BF_OK);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 64 * 1024, .rlim_max = RLIM_INFINITY};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(bf_tensor_save_npy(big, spath("a.npy"), &e), BF_EIO);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_ptr_nonnull(strstr(e.message, strerror(EFBIG)));
    rl.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    assert_npy_holds(spath("a.npy"), 7);
    ck_assert_int_eq(count_tmp(scratch), 0);
    ck_assert_int_eq(count_entries(scratch), 1);
    bf_tensor_free(big);
    bf_tensor_free(old);
}
END_TEST

/* The rename is the last step: when it fails (the target is a folder) the temp file goes. */
START_TEST(save_failing_rename_cleans_up) {
    bf_tensor *t = small_tensor(3);
    bf_error e = {0};
    ck_assert_int_eq(mkdir(spath("dir.npy"), 0700), 0);
    write_file(spath("dir.npy/keep"), "k", 1);
    ck_assert_int_eq(bf_tensor_save_npy(t, spath("dir.npy"), &e), BF_EIO);
    ck_assert_str_eq(e.code, "io_error");
    ck_assert_int_eq(count_tmp(scratch), 0);
    ck_assert_int_eq(count_entries(scratch), 1);
    bf_tensor_free(t);
}
END_TEST

/* Replacing a file works, keeps its mode; a new file gets 0666 & ~umask, not mkstemp's 0600. */
START_TEST(save_replaces_and_sets_mode) {
    bf_tensor *a = small_tensor(1), *b = small_tensor(2);
    bf_error e = {0};
    umask(022);
    ck_assert_int_eq(bf_tensor_save_npy(a, spath("m.npy"), &e), BF_OK);
    struct stat sb;
    ck_assert_int_eq(stat(spath("m.npy"), &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0644);
    ck_assert_int_eq(chmod(spath("m.npy"), 0640), 0);
    ck_assert_int_eq(bf_tensor_save_npy(b, spath("m.npy"), &e), BF_OK);
    ck_assert_int_eq(stat(spath("m.npy"), &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0640);
    assert_npy_holds(spath("m.npy"), 2);
    ck_assert_int_eq(count_tmp(scratch), 0);
    ck_assert_int_eq(count_entries(scratch), 1);
    bf_tensor_free(a);
    bf_tensor_free(b);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("read");
    tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
    tcase_add_test(tc, reads_numpy_images);
    tcase_add_loop_test(tc, rejects_bad_header, 0, BF_COUNT(bad_cases));
    tcase_add_test(tc, size_mismatch_names_both_sizes);
    tcase_add_test(tc, rejects_bad_prefix);
    tcase_add_test(tc, huge_header_claim_fails_fast);
    tcase_add_test(tc, context_element_limit);
    tcase_add_test(tc, fortran_order_of_a_vector_is_c_order);
    tcase_add_test(tc, io_errors);
    tcase_add_test(tc, out_of_memory_loop);
    suite_add_tcase(s, tc);

    tc = tcase_create("write");
    tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
    tcase_add_test(tc, writes_what_numpy_writes);
    tcase_add_loop_test(tc, round_trip, 0, (BF_DTYPE_COUNT - 1) * BF_COUNT(rt_shapes));
    tcase_add_test(tc, save_into_missing_folder);
    tcase_add_test(tc, save_into_unwritable_folder);
    tcase_add_test(tc, save_on_full_disk_keeps_old_file);
    tcase_add_test(tc, save_failing_rename_cleans_up);
    tcase_add_test(tc, save_replaces_and_sets_mode);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
