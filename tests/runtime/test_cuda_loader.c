/*
 * test_cuda_loader.c - the core's side of the CUDA backend (devices/cuda_loader.c, cuda_api.h):
 * how the plugin libblockflow_cuda.so is found, checked and used, without a GPU (label cpu).
 *
 * Every build: the GPU entry points of the core (the blocks' *_cuda_glue.c) refuse cleanly
 * when no CUDA device is behind the exec. A build without CUDA never looks for a backend
 * ("built without CUDA"). A CUDA build, with BLOCKFLOW_CUDA_BACKEND naming the file (as ctest
 * does for the test programs):
 *   - a missing file, a library that is no backend, a backend of another version, ABI or
 *     struct layout, and one that refuses, each give no GPU and say why;
 *   - a stand-in backend (fake_cuda_backend.c) is reached through every entry point: the
 *     probe, the convolution, pooling, activation and MatMul kernels and their workspaces,
 *     the GPU benchmark, and the context's device line;
 *   - the real backend (ctest's BLOCKFLOW_CUDA_BACKEND) is one of this build, probes (a GPU,
 *     or the CUDA runtime's reason there is none), and refuses a core of another ABI and a
 *     second copy of the core in the same process.
 */
#define _GNU_SOURCE
#include "bf_test.h"

#include "array_ops/matmul_cuda.h"
#include "bench_gpu.h"
#include "context.h"
#include "devices/cuda_api.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static bf_conv_geom geom(void) {
    bf_conv_geom g = {.n = 1, .in_h = 4, .in_w = 4, .in_c = 1, .k_h = 3, .k_w = 3, .k_in_c = 1,
                      .out_c = 1, .out_h = 2, .out_w = 2, .stride_h = 1, .stride_w = 1,
                      .dil_h = 1, .dil_w = 1, .groups = 1};
    return g;
}

START_TEST(glue_refuses_without_a_cuda_device) {
    bf_conv_geom g = geom();
    bf_pool_geom pg = {.n = 1, .h = 2, .w = 2, .c = 1, .oh = 1, .ow = 1, .oc = 1, .kh = 2,
                       .kw = 2, .kd = 1, .sh = 2, .sw = 2};
    bf_exec ex = {.n_threads = 1};
    bf_error e = {0};
    ck_assert_int_eq(bf_conv_cuda(BF_CONV_FWD, &g, BF_DTYPE_F32, 1, NULL, NULL, NULL, &ex, &e),
                     BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "no_gpu");
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(bf_pool_cuda(BF_POOL_MAX, &pg, BF_DTYPE_F32, NULL, NULL, NULL, 0, NULL, &e),
                     BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "no_gpu");
    ck_assert_int_eq(bf_act_cuda(BF_ACT_RELU, BF_DTYPE_F32, NULL, NULL, NULL, 1, &ex, &e),
                     BF_EUNSUPPORTED);
    ck_assert_int_eq(bf_matmul_cuda(1, 1, 1, false, false, BF_DTYPE_F32, NULL, NULL, NULL, &ex,
                                    &e),
                     BF_EUNSUPPORTED);
    ck_assert_uint_eq(bf_conv_cuda_workspace(BF_CONV_FWD, &g, BF_DTYPE_F32, 1, &ex), 0);
    ck_assert_uint_eq(bf_pool_cuda_workspace(BF_POOL_AVG_GRAD, &pg, BF_DTYPE_F32, NULL), 0);
}
END_TEST

#ifndef BF_HAVE_CUDA

START_TEST(no_backend_is_looked_for) {
    char why[128] = "";
    setenv("BLOCKFLOW_CUDA_BACKEND", "/nonexistent/libblockflow_cuda.so", 1);
    ck_assert_ptr_null(bf_cuda_backend(why, sizeof why));
    ck_assert_str_eq(why, "built without CUDA");
    bf_device devs[2];
    ck_assert_int_eq(bf_cuda_probe(devs, 2, why, sizeof why), 0);
}
END_TEST

#else /* BF_HAVE_CUDA */

/* The backend ctest names, kept before a test points the variable elsewhere. */
static const char *real_backend(void) {
    const char *p = getenv("BLOCKFLOW_CUDA_BACKEND");
    if (!p || !p[0]) ck_abort_msg("BLOCKFLOW_CUDA_BACKEND is not set (run through ctest)");
    return p;
}

static void use(const char *file, const char *variant) {
    setenv("BLOCKFLOW_CUDA_BACKEND", file, 1);
    setenv("BF_FAKE_BACKEND", variant, 1);
}

/* The reason bf_cuda_backend gives with `file` (and the fake's `variant`); NULL table. */
static const char *refused(const char *file, const char *variant) {
    static char why[256];
    use(file, variant);
    why[0] = '\0';
    ck_assert_ptr_null(bf_cuda_backend(why, sizeof why));
    bf_device devs[2];
    char why2[256] = "";
    ck_assert_int_eq(bf_cuda_probe(devs, 2, why2, sizeof why2), 0);
    ck_assert_str_eq(why, why2);
    return why;
}

START_TEST(unusable_backends_are_refused_with_the_reason) {
    const char *w = refused("/nonexistent/libblockflow_cuda.so", "");
    ck_assert_msg(strstr(w, "cannot load libblockflow_cuda.so: ") == w &&
                      strstr(w, "cannot open shared object file"), "%s", w);
    w = refused("libc.so.6", "");
    ck_assert_str_eq(w, "libblockflow_cuda.so has no bf_cuda_backend_v1 (a backend of another ABI)");
    w = refused(BF_TEST_FAKE_BACKEND, "version");
    ck_assert_str_eq(w, "libblockflow_cuda.so is from blockflow 0.0.0, this library is "
                        BF_VERSION_STRING);
    w = refused(BF_TEST_FAKE_BACKEND, "layout");
    ck_assert_msg(strstr(w, "struct sizes differ"), "%s", w);
    w = refused(BF_TEST_FAKE_BACKEND, "abi");
    ck_assert_str_eq(w, "libblockflow_cuda.so speaks backend ABI 2, this library 1");
    w = refused(BF_TEST_FAKE_BACKEND, "refuse");
    ck_assert_str_eq(w, "fake refuses");
}
END_TEST

START_TEST(every_entry_point_reaches_the_backend) {
    use(BF_TEST_FAKE_BACKEND, "");
    bf_device devs[4];
    char why[256] = "";
    ck_assert_int_eq(bf_cuda_probe(devs, 4, why, sizeof why), 1);
    ck_assert_ptr_nonnull(devs[0].cuda);
    ck_assert_str_eq(devs[0].description, "fake device of test_cuda_loader");
    bf_exec ex = {.n_threads = 1, .device = &devs[0]};
    bf_error e = {0};
    bf_conv_geom g = geom();
    bf_pool_geom pg = {.n = 1, .h = 2, .w = 2, .c = 1, .oh = 1, .ow = 1, .oc = 1, .kh = 2,
                       .kw = 2, .kd = 1, .sh = 2, .sw = 2};
    ck_assert_uint_eq(bf_conv_cuda_workspace(BF_CONV_BWD_FILTER, &g, BF_DTYPE_F32, 1, &ex), 123);
    ck_assert_int_eq(bf_conv_cuda(BF_CONV_BWD_FILTER, &g, BF_DTYPE_F32, 0, NULL, NULL, NULL, &ex,
                                  &e),
                     BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "fake");
    ck_assert_str_eq(e.message, "fake conv 1 cudnn 0");
    ck_assert_uint_eq(bf_pool_cuda_workspace(BF_POOL_AVG_GRAD, &pg, BF_DTYPE_F32, &ex), 456);
    bf_pool_cuda(BF_POOL_AVG, &pg, BF_DTYPE_F32, NULL, NULL, NULL, 0, &ex, &e);
    ck_assert_str_eq(e.message, "fake pool 2");
    bf_act_cuda(BF_ACT_TANH, BF_DTYPE_F32, NULL, NULL, NULL, 7, &ex, &e);
    ck_assert_str_eq(e.message, "fake act 2 n 7");
    bf_matmul_cuda(2, 3, 4, false, true, BF_DTYPE_F32, NULL, NULL, NULL, &ex, &e);
    ck_assert_str_eq(e.message, "fake matmul 2x3x4");
    char *argv[] = {"bench", "--device", "gpu", NULL};
    ck_assert_int_eq(bf_bench_gpu_main(3, argv), 43);
    bf_cuda_release(devs, 1);

    /* a context finds it too, and says so in its device line */
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    ck_assert_int_eq(bf_context_has_gpu(ctx), 1);
    ck_assert_msg(strstr(bf_context_devices(ctx), "; gpu:0: fake device of test_cuda_loader"),
                  "%s", bf_context_devices(ctx));
    bf_context_free(ctx);
}
END_TEST

START_TEST(the_real_backend_is_of_this_build) {
    const char *file = real_backend();
    char why[256] = "";
    use(file, "");
    const bf_cuda_api_v1 *api = bf_cuda_backend(why, sizeof why);
    ck_assert_msg(api != NULL, "%s", why);
    ck_assert_int_eq(api->abi, BF_CUDA_ABI);
    ck_assert_str_eq(api->version, BF_VERSION_STRING);
    ck_assert_ptr_eq(bf_cuda_backend(why, sizeof why), api); /* loaded once */
    bf_device devs[16];
    int n = bf_cuda_probe(devs, 16, why, sizeof why);
    printf("real backend: %d GPU(s)%s%s\n", n, n ? "" : ": ", n ? "" : why);
    if (n == 0) ck_assert_msg(strstr(why, "cuda") || strstr(why, "CUDA") || strstr(why, "cuDNN"),
                              "%s", why);
    for (int i = 0; i < n; i++)
        ck_assert_ptr_eq(devs[i].cuda, api);
    bf_cuda_release(devs, n);

    /* the entry point itself: another ABI, then a second core, are refused */
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    void *sym = dlsym(lib, BF_CUDA_ENTRY);
    ck_assert_ptr_nonnull(sym);
    bf_cuda_entry_v1 entry;
    memcpy(&entry, &sym, sizeof entry);
    bf_cuda_core_v1 other = {BF_CUDA_ABI, sizeof other, bf_malloc, bf_calloc, bf_realloc,
                             bf_free, bf_verr, bf_strlcpy, bf_dtype_name, bf_dtype_size,
                             bf_dtype_from_name};
    other.abi = 7;
    ck_assert_ptr_null(entry(&other, why, sizeof why));
    ck_assert_str_eq(why, "libblockflow_cuda.so speaks backend ABI 1, the library 7");
    other.abi = BF_CUDA_ABI;
    ck_assert_ptr_null(entry(&other, why, sizeof why));
    ck_assert_str_eq(why, "libblockflow_cuda.so already serves another copy of the blockflow "
                          "library in this process");
    dlclose(lib);
}
END_TEST

#endif /* BF_HAVE_CUDA */

static Suite *suite(void) {
    Suite *s = suite_create("cuda_loader");
    TCase *tc = tcase_create("loader");
    tcase_add_test(tc, glue_refuses_without_a_cuda_device);
#ifndef BF_HAVE_CUDA
    tcase_add_test(tc, no_backend_is_looked_for);
#else
    tcase_add_test(tc, unusable_backends_are_refused_with_the_reason);
    tcase_add_test(tc, every_entry_point_reaches_the_backend);
    tcase_add_test(tc, the_real_backend_is_of_this_build);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
